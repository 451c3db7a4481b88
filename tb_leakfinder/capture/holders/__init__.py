"""The holder finder: a companion recorder that names the references keeping a window's never-freed buffers alive.

never_freed.py reads the window's profile back for its never-freed buffers; matchers.py matches buffers to the
live objects that own them, per framework; walk.py walks the process's references from the names a user knows
(running frames' locals, the program's globals) without running any of its code; finder.py is the recorder.
"""
