# The compiled clock's declarations, so other units call it in C.
cpdef double monotonic()
