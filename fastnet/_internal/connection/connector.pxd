# C declarations for connector.py, which Cython compiles in place (pure-Python mode).
from fastnet._internal.connection.route_database cimport RouteDatabase
from fastnet._internal._sync.pool cimport RealConnectionPool
from fastnet.route cimport Address, Route


cdef class Connector:
    cdef public RealConnectionPool pool
    cdef public dict addresses
    cdef public object dns
    cdef public object proxy
    cdef public object proxy_selector
    cdef public RouteDatabase route_database
    cdef public object ssl_context
    cdef public object ssl_shared
    cdef public object proxy_authenticator
    cdef public bint fallback_to_direct
    cdef public bint happy_eyeballs
    cdef public str user_agent
    cdef public dict tls_sessions
    cdef public object local_address

    cpdef Address address_of(self, object url, object proxy)
    cpdef Address address_for(self, object url, object proxy)
    cpdef object tls_context(self)
    cpdef record_failure(self, Route route, object error)
    cpdef record_overtaken(self, Route route, object error)
    cpdef record_success(self, Route route)
