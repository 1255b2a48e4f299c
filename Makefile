# Builds libcaliper (C ABI, headers, Fortran module) and the tools, and
# installs them into a prefix:
#
#     make install PREFIX=/opt/caliper
#
# installs lib/libcaliper.so.2.15.0 (soname libcaliper.so.2, with the links
# libcaliper.so.2 and libcaliper.so) and lib/libcaliper.a, include/caliper/...,
# bin/cali-query and bin/cali-stat, lib/pkgconfig/caliper.pc and
# share/cmake/caliper/caliper-config.cmake (imported target `caliper`).
# With gfortran present it also compiles the Fortran module caliper_mod
# (include/caliper/fortran/caliper_mod.mod) into lib/libcaliper-fortran.so.2.15.0
# (which needs libcaliper.so.2 itself, so that it links in any order) and
# lib/libcaliper-fortran.a.
#
#     make install-mpi PREFIX=/opt/caliper
#
# also installs libcaliper-mpi.so (the MPI wrappers, built against the MPI
# that mpicc names; it needs libcaliper.so.2, whose runtime it reports to),
# libcaliper-mpi.a (the wrappers with the runtime, for static programs,
# which link it instead of libcaliper.a), bin/mpi-caliquery,
# caliper/cali-mpi.h and its C++ headers, and the pkg-config package
# caliper-mpi (CMake: the target caliper-mpi, which links caliper too).
#
#     make install-dbi PREFIX=/opt/caliper
#
# installs cali-run (bin/), the instrumentation engine's C-callable API
# lib/libcaliper-dbi.so and include/caliper/cali-dbi.h (x86-64 Linux);
# `cali-run --script` finds the library in ../lib beside itself and carries
# the caliper.dbi Python package (which pip installs from
# crates/caliper-dbi/python).

PREFIX ?= /usr/local
CARGO ?= cargo
ifeq ($(origin FC),default)
FC := gfortran
endif
CAPI := crates/caliper-c
MPI := crates/caliper-mpi
RELEASE := $(or $(CARGO_TARGET_DIR),target)/release
# The version of the reference's API this library implements (that of
# caliper-config.h), which build systems check: pkg-config's and CMake's
# package version and the library's file name. Its major number is the soname's.
VERSION := $(shell sed -n 's/^\#define CALIPER_VERSION "\(.*\)"/\1/p' $(CAPI)/include/caliper/caliper-config.h)
SOVERSION := $(firstword $(subst ., ,$(VERSION)))
# What a static libcaliper.a needs besides libc (from rustc --print native-static-libs).
NATIVE_LIBS := -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc

.PHONY: all install install-mpi install-dbi

# $(call install-shared,FILE,NAME): installs the shared library FILE as
# lib/NAME.so.$(VERSION), with the links NAME.so.$(SOVERSION) (its soname,
# which programs record) and NAME.so (which -lNAME finds).
install-shared = install -m 755 $(1) $(PREFIX)/lib/$(2).so.$(VERSION) && \
	ln -sf $(2).so.$(VERSION) $(PREFIX)/lib/$(2).so.$(SOVERSION) && \
	ln -sf $(2).so.$(SOVERSION) $(PREFIX)/lib/$(2).so

all:
	$(CARGO) build --release -p caliper-c -p caliper-cli

install: all
	install -d $(PREFIX)/lib/pkgconfig $(PREFIX)/bin $(PREFIX)/include $(PREFIX)/share/cmake/caliper
	$(call install-shared,$(RELEASE)/libcaliper.so,libcaliper)
	install -m 644 $(RELEASE)/libcaliper.a $(PREFIX)/lib/libcaliper.a
	strip --strip-debug $(PREFIX)/lib/libcaliper.so.$(VERSION) $(PREFIX)/lib/libcaliper.a
	install -m 755 $(RELEASE)/cali-query $(RELEASE)/cali-stat $(PREFIX)/bin/
	cp -R $(CAPI)/include/caliper $(PREFIX)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@NATIVE_LIBS@|$(NATIVE_LIBS)|g' \
		$(CAPI)/pkg/caliper.pc.in > $(PREFIX)/lib/pkgconfig/caliper.pc
	sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@SOVERSION@|$(SOVERSION)|g' \
		$(CAPI)/pkg/caliper-config.cmake.in > $(PREFIX)/share/cmake/caliper/caliper-config.cmake
	sed -e 's|@VERSION@|$(VERSION)|g' $(CAPI)/pkg/caliper-config-version.cmake.in \
		> $(PREFIX)/share/cmake/caliper/caliper-config-version.cmake
	if command -v $(FC) >/dev/null 2>&1; then \
		tmp=$$(mktemp -d) && \
		$(FC) -O2 -fPIC -J $$tmp -c $(CAPI)/include/caliper/fortran/caliper_mod.F90 -o $$tmp/caliper_mod.o && \
		$(FC) -shared -o $$tmp/libcaliper-fortran.so -Wl,-soname,libcaliper-fortran.so.$(SOVERSION) \
			$$tmp/caliper_mod.o -L$(PREFIX)/lib -lcaliper -Wl,-rpath,'$$ORIGIN' && \
		$(call install-shared,$$tmp/libcaliper-fortran.so,libcaliper-fortran) && \
		rm -f $(PREFIX)/lib/libcaliper-fortran.a && ar rcs $(PREFIX)/lib/libcaliper-fortran.a $$tmp/caliper_mod.o && \
		install -m 644 $$tmp/caliper_mod.mod $(PREFIX)/include/caliper/fortran/ && \
		sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
			$(CAPI)/pkg/caliper-fortran.pc.in > $(PREFIX)/lib/pkgconfig/caliper-fortran.pc && \
		rm -rf $$tmp; \
	else \
		echo "note: $(FC) not found: Fortran module installed as source only"; \
	fi

install-mpi: install
	$(CARGO) build --release -p caliper-mpi --features bundle-runtime
	install -m 644 $(RELEASE)/libcaliper_mpi.a $(PREFIX)/lib/libcaliper-mpi.a
	install -m 755 $(RELEASE)/mpi-caliquery $(PREFIX)/bin/
	$(CARGO) build --release -p caliper-mpi
	install -m 755 $(RELEASE)/libcaliper_mpi.so $(PREFIX)/lib/libcaliper-mpi.so
	strip --strip-debug $(PREFIX)/lib/libcaliper-mpi.so $(PREFIX)/lib/libcaliper-mpi.a
	cp -R $(MPI)/include/caliper $(PREFIX)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@NATIVE_LIBS@|$(NATIVE_LIBS)|g' \
		$(MPI)/pkg/caliper-mpi.pc.in > $(PREFIX)/lib/pkgconfig/caliper-mpi.pc

install-dbi:
	$(CARGO) build --release -p caliper-dbi
	install -d $(PREFIX)/lib $(PREFIX)/bin $(PREFIX)/include/caliper
	install -m 755 $(RELEASE)/cali-run $(PREFIX)/bin/
	install -m 755 $(RELEASE)/libcaliper_dbi.so $(PREFIX)/lib/libcaliper-dbi.so
	strip --strip-debug $(PREFIX)/lib/libcaliper-dbi.so
	install -m 644 crates/caliper-dbi/include/caliper/cali-dbi.h $(PREFIX)/include/caliper/
