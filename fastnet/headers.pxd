# C declarations for headers.py, which Cython compiles in place (pure-Python mode).
# The .py is the single source of truth; this file only adds C types. Other units cimport Headers and
# the two constructors below, so building and reading header blocks never leaves C.
cimport cython


cpdef str check_name(object name)
cpdef str check_value(object name, object value)


@cython.locals(h=Headers)
cpdef Headers headers_from_list(list items)
cpdef Headers as_headers(object headers)


@cython.final
cdef class Headers:
    cdef public list _items
    cdef public object _index
    cdef public object _wire
    cdef public object _heads

    @cython.locals(index=dict)
    cpdef dict _lookup(self)
    cpdef object get(self, object name, object default=*)
    cpdef list get_all(self, object name)
    cpdef bytes to_wire(self)
