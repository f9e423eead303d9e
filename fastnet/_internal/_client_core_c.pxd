# Declarations that compile _client_core_py.py as the typed module _client_core_c.
from fastnet._internal.connection._connector_c cimport Connector
from fastnet._internal.connection._pool_c cimport RealConnectionPool


cdef class ClientCore:
    cdef public double connect_timeout
    cdef public double read_timeout
    cdef public double write_timeout
    cdef public double call_timeout
    cdef public bint follow_redirects
    cdef public bint follow_ssl_redirects
    cdef public bint retry_on_connection_failure
    cdef public int max_follow_ups
    cdef public list interceptors
    cdef public RealConnectionPool pool
    cdef public object cookie_jar
    cdef public object event_listener
    cdef public object event_listener_factory
    cdef public str user_agent
    cdef public Connector connector
    cdef public object authenticator
    cdef public object proxy_authenticator
    cdef public frozenset sensitive_headers
    cdef public long long max_body_size
    cdef public bint closed
    cdef public object dispatcher
    cdef public object factory
    cdef public bint factory_builds
    cdef public object sync_dispatcher
    cdef object __weakref__

    cpdef object new_events(self, object call)
    cpdef ClientCore copy(self)
