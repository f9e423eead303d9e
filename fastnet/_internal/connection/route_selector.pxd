# C declarations for route_selector.py, which Cython compiles in place (pure-Python mode).
from fastnet._internal.connection.route_database cimport RouteDatabase
from fastnet.route cimport Address, Route, is_ip_literal


cpdef list ips_of(object answer, object dns, str host)
cpdef list reorder_for_happy_eyeballs(list ips)


cdef class RouteSelector:
    cdef readonly Address address
    cdef RouteDatabase _db
    cdef object _dns
    cdef object _lookup
    cdef bint _happy
    cdef list _proxies
    cdef Py_ssize_t _next_proxy
    cdef list _postponed
    cdef object _pending_error
    cdef object _dns_start
    cdef object _dns_end

    cdef _select_proxies(self, bint fallback_to_direct, object events)
    cdef list _ask_selector(self, object selector, object url)
    cpdef bint has_next(self)
    cpdef tuple next_target(self)
    cpdef list routes_for(self, object proxy, Py_ssize_t port, list ips)
    cpdef list take_postponed(self)
    cdef list _resolve(self, str host)
