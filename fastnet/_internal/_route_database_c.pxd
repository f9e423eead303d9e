# Declarations that compile _route_database_py.py as the typed module _route_database_c.
from fastnet._route_c cimport Route


cdef class RouteDatabase:
    cdef dict _failed
    cdef object _lock
    cdef public Py_ssize_t max_size

    cpdef failed(self, Route route)
    cpdef connected(self, Route route)
    cpdef bint should_postpone(self, Route route)
