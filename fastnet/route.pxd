# C declarations for route.py, which Cython compiles in place (pure-Python mode).
cimport cython


@cython.locals(dots=int, digits=int, value=int, ch=Py_UCS4)
cpdef bint is_ip_literal(str host)
cdef str _bracket(str host)
cdef Py_ssize_t _ident(object obj)


cdef class Address:
    cdef readonly str scheme
    cdef readonly str host
    cdef readonly Py_ssize_t port
    cdef readonly object proxy
    cdef readonly object proxy_selector
    cdef readonly object dns
    cdef readonly object ssl_context
    cdef readonly object proxy_authenticator
    cdef readonly object local_address
    cdef object _url
    cdef Py_hash_t _hash

    cpdef bint equals_non_host(self, Address other)


cdef class Route:
    cdef readonly Address address
    cdef readonly object proxy
    cdef readonly tuple socket_address
    cdef readonly bint requires_tunnel
    cdef Py_hash_t _hash
