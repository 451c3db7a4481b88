"""The pipeline that runs read and analyses per host file, and the Engine that serves runs from the caches,
locally or on Ray (precompute). May import everything but the views."""
