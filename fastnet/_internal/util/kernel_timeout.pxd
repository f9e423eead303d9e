# Declarations of the compiled _kernel_timeout_c, for the units that cimport set_kernel_timeout.

cpdef set_kernel_timeout(object sock, int optname, double seconds)
