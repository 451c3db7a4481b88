"""Plain columnar data in neutral terms (memory events, steps, buffer lifetimes, compiled programs' buffers):
what every format reads into and every analysis reads. Imports nothing of tb_leakfinder."""
