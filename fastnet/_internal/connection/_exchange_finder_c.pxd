# Declarations that compile _exchange_finder_py.py as the typed module _exchange_finder_c.
cimport cython
from fastnet._internal._clock_c cimport monotonic
from fastnet._internal._route_selector_c cimport RouteSelector
from fastnet._internal.connection._connection_user_c cimport ConnectionUser
from fastnet._internal.connection._connector_c cimport Connector
from fastnet._internal.connection._happy_eyeballs_c cimport connect_one
from fastnet._internal.connection._pool_c cimport RealConnectionPool
from fastnet._internal.connection._real_connection_c cimport RealConnection
from fastnet._request_c cimport Request
from fastnet._route_c cimport Address, Route, is_ip_literal


@cython.locals(address=Address, pool=RealConnectionPool, conn=RealConnection, now=double,
               finder=ExchangeFinder, held=RealConnection)
cpdef RealConnection find_connection(Connector connector, ConnectionUser user, Request request,
                                     double connect_timeout, double read_timeout)


@cython.locals(deadline=double, bound=double)
cpdef double slot_deadline(ConnectionUser user, double connect_timeout)


cdef class ExchangeFinder:
    cdef public Connector connector
    cdef public ConnectionUser user
    cdef public Address address
    cdef public RouteSelector selector
    cdef public list pending
    cdef public bint canceled
    cdef public object connecting
    cdef public set tried
    cdef public double dns_time
    cdef public double tls_time
    cdef dict _proxy_ips

    @cython.locals(pool=RealConnectionPool)
    cpdef RealConnection find(self, double connect_timeout, double read_timeout)
    cpdef RouteSelector _selector(self)
    cpdef tuple _target_of(self, Route route)
    cpdef object _establish(self, object sock, Route route, double connect_timeout, double handshake_timeout,
                            bint handshake)
