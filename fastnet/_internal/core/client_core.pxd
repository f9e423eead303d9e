# C declarations for client_core.py, which Cython compiles in place (pure-Python mode).
from fastnet._internal.connection.connector cimport Connector
from fastnet._internal._sync.pool cimport RealConnectionPool


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
