# Types for the pure-Python-mode module _route_selector_py.py (compiled as _route_selector_c).

cpdef bint is_ip_literal(str host)
cdef str _bracket(str host)
cdef Py_ssize_t _ident(object obj)
cpdef list reorder_for_happy_eyeballs(list ips)


cdef class Address:
    cdef readonly str scheme
    cdef readonly str host
    cdef readonly Py_ssize_t port
    cdef readonly object proxy
    cdef readonly object proxy_selector
    cdef readonly object dns
    cdef readonly object ssl_context
    cdef readonly object proxy_authenticator
    cdef object _url
    cdef Py_hash_t _hash

    cpdef bint equals_non_host(self, Address other)


cdef class Route:
    cdef readonly Address address
    cdef readonly object proxy
    cdef readonly tuple socket_address
    cdef readonly bint requires_tunnel
    cdef Py_hash_t _hash


cdef class RouteDatabase:
    cdef dict _failed
    cdef object _lock
    cdef public Py_ssize_t max_size

    cpdef failed(self, Route route)
    cpdef connected(self, Route route)
    cpdef bint should_postpone(self, Route route)


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
    cdef list _routes_for(self, object proxy)
    cdef list _resolve(self, str host)
    cdef object _safe_url(self)
