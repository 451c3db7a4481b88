"""XProf's XSpace profiles (`plugins/profile/<session>/<host>.xplane.pb`) and the HLO modules inside or beside
them: the compiled scanner, the reference decoder, the reader into the model, HLO, and XSpace's own labels."""
