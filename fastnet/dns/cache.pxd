# Declarations that turn fastnet/dns/cache.py into the compiled module fastnet.dns.cache
# (Cython pure-Python mode). Keep in step with the .py: every attribute of a cdef class is listed here.
cimport cython


cdef class _Entry:
    cdef public tuple addresses
    cdef public double expires
    cdef public double stale_until
    cdef public object error
    cdef public object cause


cdef class DnsCache:
    cdef readonly Py_ssize_t max_entries
    cdef readonly double default_ttl
    cdef readonly double negative_ttl
    cdef readonly double stale_ttl
    cdef object _entries
    cdef object _lock

    cdef _Entry _entry(self, str host)

    @cython.locals(entry=_Entry)
    cpdef list get(self, str host)

    @cython.locals(entry=_Entry)
    cpdef object get_error(self, str host)

    @cython.locals(entry=_Entry)
    cpdef list get_stale(self, str host)

    @cython.locals(seconds=double, now=double)
    cpdef put(self, str host, object addresses, object ttl=*)

    @cython.locals(seconds=double, now=double, old=_Entry)
    cpdef put_negative(self, str host, str reason, object ttl=*, object cause=*)
    cdef _store(self, str host, _Entry entry)
    cpdef invalidate(self, str host)
    cpdef clear(self)


cdef class IpBlacklist:
    cdef readonly Py_ssize_t threshold
    cdef readonly Py_ssize_t max_hosts
    cdef dict _failures
    cdef object _lock

    @cython.locals(per_host=dict, count=Py_ssize_t)
    cpdef bint record_failure(self, str host, str ip) except -1

    @cython.locals(per_host=dict)
    cpdef record_success(self, str host, str ip)

    @cython.locals(per_host=dict)
    cpdef Py_ssize_t failures(self, str host, str ip) except -1

    @cython.locals(per_host=dict)
    cpdef bint is_blacklisted(self, str host, str ip) except -1

    @cython.locals(per_host=dict, threshold=Py_ssize_t, kept=list)
    cpdef list filter(self, str host, list ips)
    cpdef clear(self, object host=*)


cdef class CachingDns:
    cdef public object inner
    cdef readonly DnsCache cache
    cdef public object blacklist
    cdef readonly double min_ttl
    cdef readonly double max_ttl
    cdef readonly dict _flights  # readonly: tests look at the flights in progress
    cdef object _lock

    @cython.locals(entry=_Entry, error=object)
    cpdef list lookup(self, str hostname)
    cdef list _miss(self, str hostname)
    cdef list _lead(self, str hostname, str name, object flight)
    cdef bint _block(self, str hostname, object flight) except -1
    cdef _land(self, str hostname, object flight)
    cdef _drop(self, str hostname, object flight)
    cdef object _leave(self, str hostname, object flight, object loop, object future)
    cdef list _resolve(self, str hostname, str name)

    @cython.locals(cache=DnsCache)
    cdef object _fallback(self, str hostname, object exc)

    @cython.locals(cache=DnsCache, seconds=double)
    cdef list _accept(self, str hostname, str name, list addresses, object ttl)
