"""Analyses kept between requests and restarts: the in-memory LRU, the disk cache, its codec and the analysis
version. May import the model, analyses, read and wire (the shapes of the JSON it keeps); never the engine or views."""
