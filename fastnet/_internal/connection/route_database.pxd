# C declarations for route_database.py, which Cython compiles in place (pure-Python mode).
from fastnet.route cimport Route


cdef class RouteDatabase:
    cdef dict _failed
    cdef object _lock
    cdef public Py_ssize_t max_size

    cpdef failed(self, Route route)
    cpdef connected(self, Route route)
    cpdef bint should_postpone(self, Route route)
