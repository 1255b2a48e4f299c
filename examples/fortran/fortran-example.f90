! The Fortran example: main > init, main > mainloop (a loop of 4
! iterations) > foo, with the globals `iterations` and `caliper.config`.
! The config string (e.g. "runtime-report") is the first argument.
program fortran_example
    use caliper_mod
    use, intrinsic :: iso_c_binding, only: C_INT64_T
    implicit none
    type(ConfigManager) :: mgr
    character(len=256) :: arg
    integer(C_INT64_T) :: loop_attr, iter_attr
    integer :: i
    double precision :: total

    arg = ''
    mgr = ConfigManager_new()
    if (command_argument_count() >= 1) then
        call get_command_argument(1, arg)
        call mgr%add(arg)
        if (mgr%error()) then
            write(0, *) 'Caliper config error: ', mgr%error_msg()
        end if
    end if
    call mgr%start()

    call cali_set_global_int_byname('iterations', 4)
    call cali_set_global_string_byname('caliper.config', trim(arg))

    call cali_begin_region('main')

    call cali_begin_region('init')
    total = work(1000)
    call cali_end_region('init')

    loop_attr = cali_find_attribute('loop')
    iter_attr = cali_make_loop_iteration_attribute('mainloop')
    call cali_begin_string(loop_attr, 'mainloop')
    do i = 0, 3
        call cali_begin_int(iter_attr, i)
        total = total + foo()
        call cali_end(iter_attr)
    end do
    call cali_end(loop_attr)

    call cali_end_region('main')

    call mgr%flush()
    call mgr%delete()
    if (total < 0) stop 1

contains

    function work(n) result(x)
        integer, intent(in) :: n
        double precision :: x
        integer :: k
        x = 0
        do k = 1, n
            x = x + k * 0.5d0
        end do
    end function

    function foo() result(x)
        double precision :: x
        call cali_begin_region('foo')
        x = work(100000)
        call cali_end_region('foo')
    end function

end program fortran_example
