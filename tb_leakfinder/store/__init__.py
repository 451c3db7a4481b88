"""Analyses kept between requests and restarts: the in-memory LRU, the disk cache, its codec and the analysis
version. May import the model, analyses and read; never the engine or views."""
