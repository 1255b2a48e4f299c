! Caliper: the Fortran interface (drop-in for the reference's caliper_mod):
! region, phase and by-name annotations, globals, control functions, and
! the types ConfigManager, Annotation, ScopeAnnotation and
! BufferedRegionProfile (over the C wrappers of wrap*.h). Compile this file
! with your program, or use the installed caliper_mod.mod.
!
! The types' procedures have the interfaces of the reference's
! (Shroud-generated) ones: the object of a const C++ method is
! intent(IN), so that a procedure holding an intent(IN) ConfigManager can
! call error() and error_msg(); the other methods' objects have no
! intent. Each type has get_instance, set_instance and associated, and
! .eq. / .ne. compare the objects two variables hold.
module caliper_mod
    use, intrinsic :: iso_c_binding
    implicit none
    private

    integer(C_INT), parameter, public :: CALI_TYPE_INV = 0, CALI_TYPE_USR = 1, CALI_TYPE_INT = 2, &
        CALI_TYPE_UINT = 3, CALI_TYPE_STRING = 4, CALI_TYPE_ADDR = 5, CALI_TYPE_DOUBLE = 6, &
        CALI_TYPE_BOOL = 7, CALI_TYPE_TYPE = 8, CALI_TYPE_PTR = 9
    integer(C_INT), parameter, public :: CALI_ATTR_DEFAULT = 0, CALI_ATTR_ASVALUE = 1, &
        CALI_ATTR_NOMERGE = 2, CALI_ATTR_SCOPE_PROCESS = 12, CALI_ATTR_SCOPE_THREAD = 20, &
        CALI_ATTR_SCOPE_TASK = 24, CALI_ATTR_SKIP_EVENTS = 64, CALI_ATTR_HIDDEN = 128, &
        CALI_ATTR_NESTED = 256, CALI_ATTR_GLOBAL = 512, CALI_ATTR_UNALIGNED = 1024, &
        CALI_ATTR_AGGREGATABLE = 2048
    integer(C_INT64_T), parameter, public :: CALI_INV_ID = -1_C_INT64_T
    integer, parameter, public :: CALI_FLUSH_CLEAR_BUFFERS = 1

    ! What a type holds: the address of the C object and which class it
    ! is (0: an address given to set_instance, which the type does not own).
    type, bind(C), public :: SHROUD_capsule_data
        type(C_PTR) :: addr = C_NULL_PTR
        integer(C_INT) :: idtor = 0
    end type SHROUD_capsule_data

    type :: ConfigManager
        type(SHROUD_capsule_data) :: cxxmem
    contains
        procedure :: add => configmanager_add
        procedure :: add_config_spec => configmanager_add_config_spec
        procedure :: add_option_spec => configmanager_add_option_spec
        procedure :: set_default_parameter => configmanager_set_default_parameter
        procedure :: set_default_parameter_for_config => configmanager_set_default_parameter_for_config
        procedure :: check => configmanager_check
        procedure :: error => configmanager_error
        procedure :: error_msg => configmanager_error_msg
        procedure :: start => configmanager_start
        procedure :: stop => configmanager_stop
        procedure :: flush => configmanager_flush
        procedure :: delete => ConfigManager_delete
        procedure :: get_instance => configmanager_get_instance
        procedure :: set_instance => configmanager_set_instance
        procedure :: associated => configmanager_associated
    end type ConfigManager

    ! An attribute annotation: ann = Annotation_new('name' [, properties]),
    ! then call ann%begin(value), ann%set(value) (integer or string) and
    ! ann%end(); call ann%delete() when done.
    type :: Annotation
        type(SHROUD_capsule_data) :: cxxmem
    contains
        procedure :: begin_int => annotation_begin_int
        procedure :: begin_string => annotation_begin_string
        generic :: begin => begin_int, begin_string
        procedure :: set_int => annotation_set_int
        procedure :: set_string => annotation_set_string
        generic :: set => set_int, set_string
        procedure :: end => annotation_end
        procedure :: delete => Annotation_delete
        procedure :: get_instance => annotation_get_instance
        procedure :: set_instance => annotation_set_instance
        procedure :: associated => annotation_associated
    end type Annotation

    ! A region open from s = ScopeAnnotation_begin('name') until
    ! call s%end() (or call ScopeAnnotation_end(s)).
    type :: ScopeAnnotation
        type(SHROUD_capsule_data) :: cxxmem
    contains
        procedure :: end => ScopeAnnotation_end
        procedure :: get_instance => scopeannotation_get_instance
        procedure :: set_instance => scopeannotation_set_instance
        procedure :: associated => scopeannotation_associated
    end type ScopeAnnotation

    ! Region times read from inside the program: rp =
    ! BufferedRegionProfile_new(), call rp%start(), ..., call
    ! rp%fetch_exclusive_region_times() (or inclusive), then
    ! rp%region_time('name'), rp%total_region_time() and
    ! rp%total_profiling_time(), in seconds.
    type :: BufferedRegionProfile
        type(SHROUD_capsule_data) :: cxxmem
    contains
        procedure :: start => bufferedregionprofile_start
        procedure :: stop => bufferedregionprofile_stop
        procedure :: clear => bufferedregionprofile_clear
        procedure :: fetch_exclusive_region_times => bufferedregionprofile_fetch_exclusive_region_times
        procedure :: fetch_inclusive_region_times => bufferedregionprofile_fetch_inclusive_region_times
        procedure :: total_profiling_time => bufferedregionprofile_total_profiling_time
        procedure :: total_region_time => bufferedregionprofile_total_region_time
        procedure :: region_time => bufferedregionprofile_region_time
        procedure :: delete => BufferedRegionProfile_delete
        procedure :: get_instance => bufferedregionprofile_get_instance
        procedure :: set_instance => bufferedregionprofile_set_instance
        procedure :: associated => bufferedregionprofile_associated
    end type BufferedRegionProfile

    ! Annotation_new(name) or Annotation_new(name, properties).
    interface Annotation_new
        module procedure annotation_new_default
        module procedure Annotation_new_with_properties
    end interface Annotation_new

    ! The constructors under the types' names, as Shroud names them too:
    ! mgr = ConfigManager(), ann = Annotation('name' [, properties]),
    ! scope = ScopeAnnotation('name'), rp = BufferedRegionProfile().
    interface ConfigManager
        module procedure ConfigManager_new
    end interface ConfigManager
    interface Annotation
        module procedure annotation_new_default
        module procedure Annotation_new_with_properties
    end interface Annotation
    interface ScopeAnnotation
        module procedure ScopeAnnotation_begin
    end interface ScopeAnnotation
    interface BufferedRegionProfile
        module procedure BufferedRegionProfile_new
    end interface BufferedRegionProfile

    ! a .eq. b: whether a and b hold the same object (two that hold none
    ! are not equal, as in Shroud's).
    interface operator (.eq.)
        module procedure configmanager_eq
        module procedure annotation_eq
        module procedure scopeannotation_eq
        module procedure bufferedregionprofile_eq
    end interface
    interface operator (.ne.)
        module procedure configmanager_ne
        module procedure annotation_ne
        module procedure scopeannotation_ne
        module procedure bufferedregionprofile_ne
    end interface

    public :: ConfigManager, Annotation, ScopeAnnotation, BufferedRegionProfile
    public :: operator (.eq.), operator (.ne.)
    public :: Annotation_new, Annotation_new_with_properties, Annotation_delete
    public :: ScopeAnnotation_begin, ScopeAnnotation_end
    public :: BufferedRegionProfile_new, BufferedRegionProfile_delete

    public :: ConfigManager_new, ConfigManager_delete
    public :: cali_begin_region, cali_end_region, cali_begin_phase, cali_end_phase
    public :: cali_begin_comm_region, cali_end_comm_region
    public :: cali_begin_byname, cali_begin_double_byname, cali_begin_int_byname, cali_begin_string_byname
    public :: cali_set_double_byname, cali_set_int_byname, cali_set_string_byname, cali_end_byname
    public :: cali_set_global_double_byname, cali_set_global_int_byname
    public :: cali_set_global_string_byname, cali_set_global_uint_byname
    public :: cali_create_attribute, cali_find_attribute, cali_make_loop_iteration_attribute
    public :: cali_begin, cali_begin_int, cali_begin_double, cali_begin_string, cali_end
    public :: cali_set_int, cali_set_double, cali_set_string
    public :: cali_config_set, cali_config_preset, cali_init, cali_is_initialized, cali_flush
    public :: cali_caliper_version

    interface
        subroutine c_begin_region(name) bind(C, name="cali_begin_region")
            import :: C_CHAR
            character(kind=C_CHAR), intent(in) :: name(*)
        end subroutine
        subroutine c_end_region(name) bind(C, name="cali_end_region")
            import :: C_CHAR
            character(kind=C_CHAR), intent(in) :: name(*)
        end subroutine
        subroutine c_begin_phase(name) bind(C, name="cali_begin_phase")
            import :: C_CHAR
            character(kind=C_CHAR), intent(in) :: name(*)
        end subroutine
        subroutine c_end_phase(name) bind(C, name="cali_end_phase")
            import :: C_CHAR
            character(kind=C_CHAR), intent(in) :: name(*)
        end subroutine
        subroutine c_begin_comm_region(name) bind(C, name="cali_begin_comm_region")
            import :: C_CHAR
            character(kind=C_CHAR), intent(in) :: name(*)
        end subroutine
        subroutine c_end_comm_region(name) bind(C, name="cali_end_comm_region")
            import :: C_CHAR
            character(kind=C_CHAR), intent(in) :: name(*)
        end subroutine
        subroutine c_begin_byname(name) bind(C, name="cali_begin_byname")
            import :: C_CHAR
            character(kind=C_CHAR), intent(in) :: name(*)
        end subroutine
        subroutine c_begin_double_byname(name, val) bind(C, name="cali_begin_double_byname")
            import :: C_CHAR, C_DOUBLE
            character(kind=C_CHAR), intent(in) :: name(*)
            real(C_DOUBLE), value :: val
        end subroutine
        subroutine c_begin_int_byname(name, val) bind(C, name="cali_begin_int_byname")
            import :: C_CHAR, C_INT
            character(kind=C_CHAR), intent(in) :: name(*)
            integer(C_INT), value :: val
        end subroutine
        subroutine c_begin_string_byname(name, val) bind(C, name="cali_begin_string_byname")
            import :: C_CHAR
            character(kind=C_CHAR), intent(in) :: name(*), val(*)
        end subroutine
        subroutine c_set_double_byname(name, val) bind(C, name="cali_set_double_byname")
            import :: C_CHAR, C_DOUBLE
            character(kind=C_CHAR), intent(in) :: name(*)
            real(C_DOUBLE), value :: val
        end subroutine
        subroutine c_set_int_byname(name, val) bind(C, name="cali_set_int_byname")
            import :: C_CHAR, C_INT
            character(kind=C_CHAR), intent(in) :: name(*)
            integer(C_INT), value :: val
        end subroutine
        subroutine c_set_string_byname(name, val) bind(C, name="cali_set_string_byname")
            import :: C_CHAR
            character(kind=C_CHAR), intent(in) :: name(*), val(*)
        end subroutine
        subroutine c_end_byname(name) bind(C, name="cali_end_byname")
            import :: C_CHAR
            character(kind=C_CHAR), intent(in) :: name(*)
        end subroutine
        subroutine c_set_global_double_byname(name, val) bind(C, name="cali_set_global_double_byname")
            import :: C_CHAR, C_DOUBLE
            character(kind=C_CHAR), intent(in) :: name(*)
            real(C_DOUBLE), value :: val
        end subroutine
        subroutine c_set_global_int_byname(name, val) bind(C, name="cali_set_global_int_byname")
            import :: C_CHAR, C_INT
            character(kind=C_CHAR), intent(in) :: name(*)
            integer(C_INT), value :: val
        end subroutine
        subroutine c_set_global_string_byname(name, val) bind(C, name="cali_set_global_string_byname")
            import :: C_CHAR
            character(kind=C_CHAR), intent(in) :: name(*), val(*)
        end subroutine
        subroutine c_set_global_uint_byname(name, val) bind(C, name="cali_set_global_uint_byname")
            import :: C_CHAR, C_INT64_T
            character(kind=C_CHAR), intent(in) :: name(*)
            integer(C_INT64_T), value :: val
        end subroutine
        function c_create_attribute(name, type, props) result(id) bind(C, name="cali_create_attribute")
            import :: C_CHAR, C_INT, C_INT64_T
            character(kind=C_CHAR), intent(in) :: name(*)
            integer(C_INT), value :: type, props
            integer(C_INT64_T) :: id
        end function
        function c_make_loop_iteration_attribute(name) result(id) &
                bind(C, name="cali_make_loop_iteration_attribute")
            import :: C_CHAR, C_INT64_T
            character(kind=C_CHAR), intent(in) :: name(*)
            integer(C_INT64_T) :: id
        end function
        function c_find_attribute(name) result(id) bind(C, name="cali_find_attribute")
            import :: C_CHAR, C_INT64_T
            character(kind=C_CHAR), intent(in) :: name(*)
            integer(C_INT64_T) :: id
        end function
        subroutine cali_begin(attr) bind(C, name="cali_begin")
            import :: C_INT64_T
            integer(C_INT64_T), value :: attr
        end subroutine
        subroutine cali_begin_int(attr, val) bind(C, name="cali_begin_int")
            import :: C_INT64_T, C_INT
            integer(C_INT64_T), value :: attr
            integer(C_INT), value :: val
        end subroutine
        subroutine cali_begin_double(attr, val) bind(C, name="cali_begin_double")
            import :: C_INT64_T, C_DOUBLE
            integer(C_INT64_T), value :: attr
            real(C_DOUBLE), value :: val
        end subroutine
        subroutine c_begin_string(attr, val) bind(C, name="cali_begin_string")
            import :: C_INT64_T, C_CHAR
            integer(C_INT64_T), value :: attr
            character(kind=C_CHAR), intent(in) :: val(*)
        end subroutine
        subroutine cali_end(attr) bind(C, name="cali_end")
            import :: C_INT64_T
            integer(C_INT64_T), value :: attr
        end subroutine
        subroutine cali_set_int(attr, val) bind(C, name="cali_set_int")
            import :: C_INT64_T, C_INT
            integer(C_INT64_T), value :: attr
            integer(C_INT), value :: val
        end subroutine
        subroutine cali_set_double(attr, val) bind(C, name="cali_set_double")
            import :: C_INT64_T, C_DOUBLE
            integer(C_INT64_T), value :: attr
            real(C_DOUBLE), value :: val
        end subroutine
        subroutine c_set_string(attr, val) bind(C, name="cali_set_string")
            import :: C_INT64_T, C_CHAR
            integer(C_INT64_T), value :: attr
            character(kind=C_CHAR), intent(in) :: val(*)
        end subroutine
        subroutine c_config_set(key, val) bind(C, name="cali_config_set")
            import :: C_CHAR
            character(kind=C_CHAR), intent(in) :: key(*), val(*)
        end subroutine
        subroutine c_config_preset(key, val) bind(C, name="cali_config_preset")
            import :: C_CHAR
            character(kind=C_CHAR), intent(in) :: key(*), val(*)
        end subroutine
        subroutine cali_init() bind(C, name="cali_init")
        end subroutine
        function c_is_initialized() result(r) bind(C, name="cali_is_initialized")
            import :: C_INT
            integer(C_INT) :: r
        end function
        subroutine cali_flush(opts) bind(C, name="cali_flush")
            import :: C_INT
            integer(C_INT), value :: opts
        end subroutine
        function c_caliper_version() result(p) bind(C, name="cali_caliper_version")
            import :: C_PTR
            type(C_PTR) :: p
        end function

        function c_cm_new(rv) result(p) bind(C, name="cali_ConfigManager_new")
            import :: SHROUD_capsule_data, C_PTR
            type(SHROUD_capsule_data), intent(OUT) :: rv
            type(C_PTR) :: p
        end function
        subroutine c_cm_delete(self) bind(C, name="cali_ConfigManager_delete")
            import :: SHROUD_capsule_data
            type(SHROUD_capsule_data), intent(INOUT) :: self
        end subroutine
        function c_cm_add(self, cfg) result(ok) bind(C, name="cali_ConfigManager_add")
            import :: SHROUD_capsule_data, C_CHAR, C_BOOL
            type(SHROUD_capsule_data), intent(IN) :: self
            character(kind=C_CHAR), intent(in) :: cfg(*)
            logical(C_BOOL) :: ok
        end function
        subroutine c_cm_add_config_spec(self, spec) bind(C, name="cali_ConfigManager_add_config_spec")
            import :: SHROUD_capsule_data, C_CHAR
            type(SHROUD_capsule_data), intent(IN) :: self
            character(kind=C_CHAR), intent(in) :: spec(*)
        end subroutine
        subroutine c_cm_add_option_spec(self, spec) bind(C, name="cali_ConfigManager_add_option_spec")
            import :: SHROUD_capsule_data, C_CHAR
            type(SHROUD_capsule_data), intent(IN) :: self
            character(kind=C_CHAR), intent(in) :: spec(*)
        end subroutine
        subroutine c_cm_set_default_parameter(self, key, val) &
                bind(C, name="cali_ConfigManager_set_default_parameter")
            import :: SHROUD_capsule_data, C_CHAR
            type(SHROUD_capsule_data), intent(IN) :: self
            character(kind=C_CHAR), intent(in) :: key(*), val(*)
        end subroutine
        subroutine c_cm_set_default_parameter_for_config(self, cfg, key, val) &
                bind(C, name="cali_ConfigManager_set_default_parameter_for_config")
            import :: SHROUD_capsule_data, C_CHAR
            type(SHROUD_capsule_data), intent(IN) :: self
            character(kind=C_CHAR), intent(in) :: cfg(*), key(*), val(*)
        end subroutine
        function c_cm_check(self, cfg, allow_extra) result(p) bind(C, name="cali_ConfigManager_check")
            import :: SHROUD_capsule_data, C_CHAR, C_PTR, C_BOOL
            type(SHROUD_capsule_data), intent(IN) :: self
            character(kind=C_CHAR), intent(in) :: cfg(*)
            logical(C_BOOL), value :: allow_extra
            type(C_PTR) :: p
        end function
        function c_cm_error(self) result(err) bind(C, name="cali_ConfigManager_error")
            import :: SHROUD_capsule_data, C_BOOL
            type(SHROUD_capsule_data), intent(IN) :: self
            logical(C_BOOL) :: err
        end function
        function c_cm_error_msg(self) result(p) bind(C, name="cali_ConfigManager_error_msg")
            import :: SHROUD_capsule_data, C_PTR
            type(SHROUD_capsule_data), intent(IN) :: self
            type(C_PTR) :: p
        end function
        subroutine c_cm_start(self) bind(C, name="cali_ConfigManager_start")
            import :: SHROUD_capsule_data
            type(SHROUD_capsule_data), intent(IN) :: self
        end subroutine
        subroutine c_cm_stop(self) bind(C, name="cali_ConfigManager_stop")
            import :: SHROUD_capsule_data
            type(SHROUD_capsule_data), intent(IN) :: self
        end subroutine
        subroutine c_cm_flush(self) bind(C, name="cali_ConfigManager_flush")
            import :: SHROUD_capsule_data
            type(SHROUD_capsule_data), intent(IN) :: self
        end subroutine
        function c_ann_new(name, rv) result(p) bind(C, name="cali_Annotation_new")
            import :: SHROUD_capsule_data, C_CHAR, C_PTR
            character(kind=C_CHAR), intent(in) :: name(*)
            type(SHROUD_capsule_data), intent(OUT) :: rv
            type(C_PTR) :: p
        end function
        function c_ann_new_with_properties(name, opt, rv) result(p) &
                bind(C, name="cali_Annotation_new_with_properties")
            import :: SHROUD_capsule_data, C_CHAR, C_INT, C_PTR
            character(kind=C_CHAR), intent(in) :: name(*)
            integer(C_INT), value :: opt
            type(SHROUD_capsule_data), intent(OUT) :: rv
            type(C_PTR) :: p
        end function
        subroutine c_ann_delete(self) bind(C, name="cali_Annotation_delete")
            import :: SHROUD_capsule_data
            type(SHROUD_capsule_data), intent(INOUT) :: self
        end subroutine
        subroutine c_ann_begin_int(self, val) bind(C, name="cali_Annotation_begin_int")
            import :: SHROUD_capsule_data, C_INT
            type(SHROUD_capsule_data), intent(IN) :: self
            integer(C_INT), value :: val
        end subroutine
        subroutine c_ann_begin_string(self, val) bind(C, name="cali_Annotation_begin_string")
            import :: SHROUD_capsule_data, C_CHAR
            type(SHROUD_capsule_data), intent(IN) :: self
            character(kind=C_CHAR), intent(in) :: val(*)
        end subroutine
        subroutine c_ann_set_int(self, val) bind(C, name="cali_Annotation_set_int")
            import :: SHROUD_capsule_data, C_INT
            type(SHROUD_capsule_data), intent(IN) :: self
            integer(C_INT), value :: val
        end subroutine
        subroutine c_ann_set_string(self, val) bind(C, name="cali_Annotation_set_string")
            import :: SHROUD_capsule_data, C_CHAR
            type(SHROUD_capsule_data), intent(IN) :: self
            character(kind=C_CHAR), intent(in) :: val(*)
        end subroutine
        subroutine c_ann_end(self) bind(C, name="cali_Annotation_end")
            import :: SHROUD_capsule_data
            type(SHROUD_capsule_data), intent(IN) :: self
        end subroutine

        function c_scope_begin(name, rv) result(p) bind(C, name="cali_ScopeAnnotation_begin")
            import :: SHROUD_capsule_data, C_CHAR, C_PTR
            character(kind=C_CHAR), intent(in) :: name(*)
            type(SHROUD_capsule_data), intent(OUT) :: rv
            type(C_PTR) :: p
        end function
        subroutine c_scope_end(self) bind(C, name="cali_ScopeAnnotation_end")
            import :: SHROUD_capsule_data
            type(SHROUD_capsule_data), intent(INOUT) :: self
        end subroutine

        function c_rp_new(rv) result(p) bind(C, name="cali_BufferedRegionProfile_new")
            import :: SHROUD_capsule_data, C_PTR
            type(SHROUD_capsule_data), intent(OUT) :: rv
            type(C_PTR) :: p
        end function
        subroutine c_rp_delete(self) bind(C, name="cali_BufferedRegionProfile_delete")
            import :: SHROUD_capsule_data
            type(SHROUD_capsule_data), intent(INOUT) :: self
        end subroutine
        subroutine c_rp_start(self) bind(C, name="cali_BufferedRegionProfile_start")
            import :: SHROUD_capsule_data
            type(SHROUD_capsule_data), intent(IN) :: self
        end subroutine
        subroutine c_rp_stop(self) bind(C, name="cali_BufferedRegionProfile_stop")
            import :: SHROUD_capsule_data
            type(SHROUD_capsule_data), intent(IN) :: self
        end subroutine
        subroutine c_rp_clear(self) bind(C, name="cali_BufferedRegionProfile_clear")
            import :: SHROUD_capsule_data
            type(SHROUD_capsule_data), intent(IN) :: self
        end subroutine
        subroutine c_rp_fetch_exclusive(self, region_type) &
                bind(C, name="cali_BufferedRegionProfile_fetch_exclusive_region_times")
            import :: SHROUD_capsule_data, C_CHAR
            type(SHROUD_capsule_data), intent(IN) :: self
            character(kind=C_CHAR), intent(in) :: region_type(*)
        end subroutine
        subroutine c_rp_fetch_inclusive(self, region_type) &
                bind(C, name="cali_BufferedRegionProfile_fetch_inclusive_region_times")
            import :: SHROUD_capsule_data, C_CHAR
            type(SHROUD_capsule_data), intent(IN) :: self
            character(kind=C_CHAR), intent(in) :: region_type(*)
        end subroutine
        function c_rp_total_profiling_time(self) result(t) &
                bind(C, name="cali_BufferedRegionProfile_total_profiling_time")
            import :: SHROUD_capsule_data, C_DOUBLE
            type(SHROUD_capsule_data), intent(IN) :: self
            real(C_DOUBLE) :: t
        end function
        function c_rp_total_region_time(self) result(t) &
                bind(C, name="cali_BufferedRegionProfile_total_region_time")
            import :: SHROUD_capsule_data, C_DOUBLE
            type(SHROUD_capsule_data), intent(IN) :: self
            real(C_DOUBLE) :: t
        end function
        function c_rp_region_time(self, region) result(t) &
                bind(C, name="cali_BufferedRegionProfile_region_time")
            import :: SHROUD_capsule_data, C_CHAR, C_DOUBLE
            type(SHROUD_capsule_data), intent(IN) :: self
            character(kind=C_CHAR), intent(in) :: region(*)
            real(C_DOUBLE) :: t
        end function
        function c_strlen(p) result(n) bind(C, name="strlen")
            import :: C_PTR, C_SIZE_T
            type(C_PTR), value :: p
            integer(C_SIZE_T) :: n
        end function
    end interface

contains

    ! A Fortran string as a C string (trailing blanks dropped).
    pure function cstr(s) result(c)
        character(len=*), intent(in) :: s
        character(kind=C_CHAR, len=len_trim(s) + 1) :: c
        c = trim(s) // C_NULL_CHAR
    end function

    ! A C string as a Fortran string.
    function fstr(p) result(s)
        type(C_PTR), intent(in) :: p
        character(len=:), allocatable :: s
        character(kind=C_CHAR), pointer :: chars(:)
        integer :: n, i
        if (.not. c_associated(p)) then
            s = ''
            return
        end if
        n = int(c_strlen(p))
        call c_f_pointer(p, chars, [n])
        allocate(character(len=n) :: s)
        do i = 1, n
            s(i:i) = chars(i)
        end do
    end function

    subroutine cali_begin_region(name)
        character(len=*), intent(in) :: name
        call c_begin_region(cstr(name))
    end subroutine
    subroutine cali_end_region(name)
        character(len=*), intent(in) :: name
        call c_end_region(cstr(name))
    end subroutine
    subroutine cali_begin_phase(name)
        character(len=*), intent(in) :: name
        call c_begin_phase(cstr(name))
    end subroutine
    subroutine cali_end_phase(name)
        character(len=*), intent(in) :: name
        call c_end_phase(cstr(name))
    end subroutine
    subroutine cali_begin_comm_region(name)
        character(len=*), intent(in) :: name
        call c_begin_comm_region(cstr(name))
    end subroutine
    subroutine cali_end_comm_region(name)
        character(len=*), intent(in) :: name
        call c_end_comm_region(cstr(name))
    end subroutine

    subroutine cali_begin_byname(name)
        character(len=*), intent(in) :: name
        call c_begin_byname(cstr(name))
    end subroutine
    subroutine cali_begin_double_byname(name, val)
        character(len=*), intent(in) :: name
        real(C_DOUBLE), intent(in) :: val
        call c_begin_double_byname(cstr(name), val)
    end subroutine
    subroutine cali_begin_int_byname(name, val)
        character(len=*), intent(in) :: name
        integer(C_INT), intent(in) :: val
        call c_begin_int_byname(cstr(name), val)
    end subroutine
    subroutine cali_begin_string_byname(name, val)
        character(len=*), intent(in) :: name, val
        call c_begin_string_byname(cstr(name), cstr(val))
    end subroutine
    subroutine cali_set_double_byname(name, val)
        character(len=*), intent(in) :: name
        real(C_DOUBLE), intent(in) :: val
        call c_set_double_byname(cstr(name), val)
    end subroutine
    subroutine cali_set_int_byname(name, val)
        character(len=*), intent(in) :: name
        integer(C_INT), intent(in) :: val
        call c_set_int_byname(cstr(name), val)
    end subroutine
    subroutine cali_set_string_byname(name, val)
        character(len=*), intent(in) :: name, val
        call c_set_string_byname(cstr(name), cstr(val))
    end subroutine
    subroutine cali_end_byname(name)
        character(len=*), intent(in) :: name
        call c_end_byname(cstr(name))
    end subroutine
    subroutine cali_set_global_double_byname(name, val)
        character(len=*), intent(in) :: name
        real(C_DOUBLE), intent(in) :: val
        call c_set_global_double_byname(cstr(name), val)
    end subroutine
    subroutine cali_set_global_int_byname(name, val)
        character(len=*), intent(in) :: name
        integer(C_INT), intent(in) :: val
        call c_set_global_int_byname(cstr(name), val)
    end subroutine
    subroutine cali_set_global_string_byname(name, val)
        character(len=*), intent(in) :: name, val
        call c_set_global_string_byname(cstr(name), cstr(val))
    end subroutine
    subroutine cali_set_global_uint_byname(name, val)
        character(len=*), intent(in) :: name
        integer(C_INT64_T), intent(in) :: val
        call c_set_global_uint_byname(cstr(name), val)
    end subroutine

    function cali_create_attribute(name, type, props) result(id)
        character(len=*), intent(in) :: name
        integer, intent(in) :: type, props
        integer(C_INT64_T) :: id
        id = c_create_attribute(cstr(name), int(type, C_INT), int(props, C_INT))
    end function
    function cali_find_attribute(name) result(id)
        character(len=*), intent(in) :: name
        integer(C_INT64_T) :: id
        id = c_find_attribute(cstr(name))
    end function
    ! The attribute iteration#<name> of a loop's iterations.
    function cali_make_loop_iteration_attribute(name) result(id)
        character(len=*), intent(in) :: name
        integer(C_INT64_T) :: id
        id = c_make_loop_iteration_attribute(cstr(name))
    end function
    subroutine cali_begin_string(attr, val)
        integer(C_INT64_T), intent(in) :: attr
        character(len=*), intent(in) :: val
        call c_begin_string(attr, cstr(val))
    end subroutine
    subroutine cali_set_string(attr, val)
        integer(C_INT64_T), intent(in) :: attr
        character(len=*), intent(in) :: val
        call c_set_string(attr, cstr(val))
    end subroutine

    subroutine cali_config_set(key, val)
        character(len=*), intent(in) :: key, val
        call c_config_set(cstr(key), cstr(val))
    end subroutine
    subroutine cali_config_preset(key, val)
        character(len=*), intent(in) :: key, val
        call c_config_preset(cstr(key), cstr(val))
    end subroutine
    function cali_is_initialized() result(r)
        logical :: r
        r = c_is_initialized() /= 0
    end function
    function cali_caliper_version() result(v)
        character(len=:), allocatable :: v
        v = fstr(c_caliper_version())
    end function

    function ConfigManager_new() result(mgr)
        type(ConfigManager) :: mgr
        type(C_PTR) :: unused
        unused = c_cm_new(mgr%cxxmem)
    end function
    ! Deletes the manager (also `call mgr%delete()`).
    subroutine ConfigManager_delete(mgr)
        class(ConfigManager) :: mgr
        call c_cm_delete(mgr%cxxmem)
    end subroutine

    subroutine configmanager_add(obj, config)
        class(ConfigManager) :: obj
        character(len=*), intent(in) :: config
        logical(C_BOOL) :: ok
        ok = c_cm_add(obj%cxxmem, cstr(config))
    end subroutine
    subroutine configmanager_add_config_spec(obj, spec)
        class(ConfigManager) :: obj
        character(len=*), intent(in) :: spec
        call c_cm_add_config_spec(obj%cxxmem, cstr(spec))
    end subroutine
    subroutine configmanager_add_option_spec(obj, spec)
        class(ConfigManager) :: obj
        character(len=*), intent(in) :: spec
        call c_cm_add_option_spec(obj%cxxmem, cstr(spec))
    end subroutine
    subroutine configmanager_set_default_parameter(obj, key, val)
        class(ConfigManager) :: obj
        character(len=*), intent(in) :: key, val
        call c_cm_set_default_parameter(obj%cxxmem, cstr(key), cstr(val))
    end subroutine
    subroutine configmanager_set_default_parameter_for_config(obj, config, key, val)
        class(ConfigManager) :: obj
        character(len=*), intent(in) :: config, key, val
        call c_cm_set_default_parameter_for_config(obj%cxxmem, cstr(config), cstr(key), cstr(val))
    end subroutine
    function configmanager_check(obj, config) result(msg)
        class(ConfigManager), intent(IN) :: obj
        character(len=*), intent(in) :: config
        character(len=:), allocatable :: msg
        msg = fstr(c_cm_check(obj%cxxmem, cstr(config), .false._C_BOOL))
    end function
    function configmanager_error(obj) result(err)
        class(ConfigManager), intent(IN) :: obj
        logical :: err
        err = c_cm_error(obj%cxxmem)
    end function
    function configmanager_error_msg(obj) result(msg)
        class(ConfigManager), intent(IN) :: obj
        character(len=:), allocatable :: msg
        msg = fstr(c_cm_error_msg(obj%cxxmem))
    end function
    subroutine configmanager_start(obj)
        class(ConfigManager) :: obj
        call c_cm_start(obj%cxxmem)
    end subroutine
    subroutine configmanager_stop(obj)
        class(ConfigManager) :: obj
        call c_cm_stop(obj%cxxmem)
    end subroutine
    subroutine configmanager_flush(obj)
        class(ConfigManager) :: obj
        call c_cm_flush(obj%cxxmem)
    end subroutine
    function annotation_new_default(name) result(ann)
        character(len=*), intent(in) :: name
        type(Annotation) :: ann
        type(C_PTR) :: unused
        unused = c_ann_new(cstr(name), ann%cxxmem)
    end function
    ! An annotation whose attribute has the CALI_ATTR_* flags properties.
    function Annotation_new_with_properties(name, properties) result(ann)
        character(len=*), intent(in) :: name
        integer, intent(in) :: properties
        type(Annotation) :: ann
        type(C_PTR) :: unused
        unused = c_ann_new_with_properties(cstr(name), int(properties, C_INT), ann%cxxmem)
    end function
    ! Deletes the annotation (also `call ann%delete()`).
    subroutine Annotation_delete(ann)
        class(Annotation) :: ann
        call c_ann_delete(ann%cxxmem)
    end subroutine
    subroutine annotation_begin_int(obj, val)
        class(Annotation) :: obj
        integer(C_INT), intent(in) :: val
        call c_ann_begin_int(obj%cxxmem, val)
    end subroutine
    subroutine annotation_begin_string(obj, val)
        class(Annotation) :: obj
        character(len=*), intent(in) :: val
        call c_ann_begin_string(obj%cxxmem, cstr(val))
    end subroutine
    subroutine annotation_set_int(obj, val)
        class(Annotation) :: obj
        integer(C_INT), intent(in) :: val
        call c_ann_set_int(obj%cxxmem, val)
    end subroutine
    subroutine annotation_set_string(obj, val)
        class(Annotation) :: obj
        character(len=*), intent(in) :: val
        call c_ann_set_string(obj%cxxmem, cstr(val))
    end subroutine
    subroutine annotation_end(obj)
        class(Annotation) :: obj
        call c_ann_end(obj%cxxmem)
    end subroutine

    ! Begins region name; it ends with call s%end().
    function ScopeAnnotation_begin(name) result(scope)
        character(len=*), intent(in) :: name
        type(ScopeAnnotation) :: scope
        type(C_PTR) :: unused
        unused = c_scope_begin(cstr(name), scope%cxxmem)
    end function
    subroutine ScopeAnnotation_end(scope)
        class(ScopeAnnotation) :: scope
        call c_scope_end(scope%cxxmem)
    end subroutine

    function BufferedRegionProfile_new() result(rp)
        type(BufferedRegionProfile) :: rp
        type(C_PTR) :: unused
        unused = c_rp_new(rp%cxxmem)
    end function
    ! Deletes the profile (also `call rp%delete()`).
    subroutine BufferedRegionProfile_delete(rp)
        class(BufferedRegionProfile) :: rp
        call c_rp_delete(rp%cxxmem)
    end subroutine
    subroutine bufferedregionprofile_start(obj)
        class(BufferedRegionProfile) :: obj
        call c_rp_start(obj%cxxmem)
    end subroutine
    subroutine bufferedregionprofile_stop(obj)
        class(BufferedRegionProfile) :: obj
        call c_rp_stop(obj%cxxmem)
    end subroutine
    subroutine bufferedregionprofile_clear(obj)
        class(BufferedRegionProfile) :: obj
        call c_rp_clear(obj%cxxmem)
    end subroutine
    ! Fetches the times of the regions of attribute region_type (all
    ! nested attributes if absent or '').
    subroutine bufferedregionprofile_fetch_exclusive_region_times(obj, region_type)
        class(BufferedRegionProfile) :: obj
        character(len=*), intent(in), optional :: region_type
        if (present(region_type)) then
            call c_rp_fetch_exclusive(obj%cxxmem, cstr(region_type))
        else
            call c_rp_fetch_exclusive(obj%cxxmem, C_NULL_CHAR)
        end if
    end subroutine
    subroutine bufferedregionprofile_fetch_inclusive_region_times(obj, region_type)
        class(BufferedRegionProfile) :: obj
        character(len=*), intent(in), optional :: region_type
        if (present(region_type)) then
            call c_rp_fetch_inclusive(obj%cxxmem, cstr(region_type))
        else
            call c_rp_fetch_inclusive(obj%cxxmem, C_NULL_CHAR)
        end if
    end subroutine
    function bufferedregionprofile_total_profiling_time(obj) result(t)
        class(BufferedRegionProfile), intent(IN) :: obj
        real(C_DOUBLE) :: t
        t = c_rp_total_profiling_time(obj%cxxmem)
    end function
    function bufferedregionprofile_total_region_time(obj) result(t)
        class(BufferedRegionProfile), intent(IN) :: obj
        real(C_DOUBLE) :: t
        t = c_rp_total_region_time(obj%cxxmem)
    end function
    function bufferedregionprofile_region_time(obj, region) result(t)
        class(BufferedRegionProfile), intent(IN) :: obj
        character(len=*), intent(in) :: region
        real(C_DOUBLE) :: t
        t = c_rp_region_time(obj%cxxmem, cstr(region))
    end function

    ! The procedures every type has: get_instance (the address of the
    ! object held), set_instance (hold the object at an address, without
    ! owning it: delete then forgets it and leaves it to its owner),
    ! associated (whether an object is held), and .eq. / .ne.
    function configmanager_get_instance(obj) result(cxxptr)
        class(ConfigManager), intent(IN) :: obj
        type(C_PTR) :: cxxptr
        cxxptr = obj%cxxmem%addr
    end function
    subroutine configmanager_set_instance(obj, cxxmem)
        class(ConfigManager), intent(INOUT) :: obj
        type(C_PTR), intent(IN) :: cxxmem
        obj%cxxmem = SHROUD_capsule_data(cxxmem, 0)
    end subroutine
    function configmanager_associated(obj) result(rv)
        class(ConfigManager), intent(IN) :: obj
        logical :: rv
        rv = c_associated(obj%cxxmem%addr)
    end function
    function configmanager_eq(a, b) result(rv)
        type(ConfigManager), intent(IN) :: a, b
        logical :: rv
        rv = c_associated(a%cxxmem%addr, b%cxxmem%addr)
    end function
    function configmanager_ne(a, b) result(rv)
        type(ConfigManager), intent(IN) :: a, b
        logical :: rv
        rv = .not. c_associated(a%cxxmem%addr, b%cxxmem%addr)
    end function
    function annotation_get_instance(obj) result(cxxptr)
        class(Annotation), intent(IN) :: obj
        type(C_PTR) :: cxxptr
        cxxptr = obj%cxxmem%addr
    end function
    subroutine annotation_set_instance(obj, cxxmem)
        class(Annotation), intent(INOUT) :: obj
        type(C_PTR), intent(IN) :: cxxmem
        obj%cxxmem = SHROUD_capsule_data(cxxmem, 0)
    end subroutine
    function annotation_associated(obj) result(rv)
        class(Annotation), intent(IN) :: obj
        logical :: rv
        rv = c_associated(obj%cxxmem%addr)
    end function
    function annotation_eq(a, b) result(rv)
        type(Annotation), intent(IN) :: a, b
        logical :: rv
        rv = c_associated(a%cxxmem%addr, b%cxxmem%addr)
    end function
    function annotation_ne(a, b) result(rv)
        type(Annotation), intent(IN) :: a, b
        logical :: rv
        rv = .not. c_associated(a%cxxmem%addr, b%cxxmem%addr)
    end function
    function scopeannotation_get_instance(obj) result(cxxptr)
        class(ScopeAnnotation), intent(IN) :: obj
        type(C_PTR) :: cxxptr
        cxxptr = obj%cxxmem%addr
    end function
    subroutine scopeannotation_set_instance(obj, cxxmem)
        class(ScopeAnnotation), intent(INOUT) :: obj
        type(C_PTR), intent(IN) :: cxxmem
        obj%cxxmem = SHROUD_capsule_data(cxxmem, 0)
    end subroutine
    function scopeannotation_associated(obj) result(rv)
        class(ScopeAnnotation), intent(IN) :: obj
        logical :: rv
        rv = c_associated(obj%cxxmem%addr)
    end function
    function scopeannotation_eq(a, b) result(rv)
        type(ScopeAnnotation), intent(IN) :: a, b
        logical :: rv
        rv = c_associated(a%cxxmem%addr, b%cxxmem%addr)
    end function
    function scopeannotation_ne(a, b) result(rv)
        type(ScopeAnnotation), intent(IN) :: a, b
        logical :: rv
        rv = .not. c_associated(a%cxxmem%addr, b%cxxmem%addr)
    end function
    function bufferedregionprofile_get_instance(obj) result(cxxptr)
        class(BufferedRegionProfile), intent(IN) :: obj
        type(C_PTR) :: cxxptr
        cxxptr = obj%cxxmem%addr
    end function
    subroutine bufferedregionprofile_set_instance(obj, cxxmem)
        class(BufferedRegionProfile), intent(INOUT) :: obj
        type(C_PTR), intent(IN) :: cxxmem
        obj%cxxmem = SHROUD_capsule_data(cxxmem, 0)
    end subroutine
    function bufferedregionprofile_associated(obj) result(rv)
        class(BufferedRegionProfile), intent(IN) :: obj
        logical :: rv
        rv = c_associated(obj%cxxmem%addr)
    end function
    function bufferedregionprofile_eq(a, b) result(rv)
        type(BufferedRegionProfile), intent(IN) :: a, b
        logical :: rv
        rv = c_associated(a%cxxmem%addr, b%cxxmem%addr)
    end function
    function bufferedregionprofile_ne(a, b) result(rv)
        type(BufferedRegionProfile), intent(IN) :: a, b
        logical :: rv
        rv = .not. c_associated(a%cxxmem%addr, b%cxxmem%addr)
    end function
end module caliper_mod
