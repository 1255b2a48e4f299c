! The derived types of caliper_mod: a ConfigManager writes a
! runtime-report to stdout; a ScopeAnnotation, a nested string Annotation
! and an integer Annotation mark the work; a BufferedRegionProfile reads
! the region times back. Prints the times it read ("time <kind> <region>
! <seconds>") for the Rust test to check against the time spent.
program types
    use caliper_mod
    use, intrinsic :: iso_c_binding, only: C_DOUBLE
    implicit none
    type(ConfigManager) :: mgr
    type(ScopeAnnotation) :: scope
    type(Annotation) :: kind, step
    type(BufferedRegionProfile) :: rp
    integer :: i

    mgr = ConfigManager_new()
    call mgr%set_default_parameter('output', 'stdout')
    call mgr%add('runtime-report')
    if (mgr%error()) then
        write(*, '(a, a)') 'config error: ', mgr%error_msg()
        stop 1
    end if
    call mgr%start()

    rp = BufferedRegionProfile_new()
    call rp%start()

    ! f.outer (10 ms of its own) > f.kind=heavy (20 ms), then three
    ! steps of 5 ms (f.step=1..3, not a nested attribute: f.outer's time)
    scope = ScopeAnnotation_begin('f.outer')
    call spin(10)
    kind = Annotation_new('f.kind', CALI_ATTR_NESTED)
    call kind%begin('heavy')
    call spin(20)
    call kind%end()
    step = Annotation_new('f.step')
    do i = 1, 3
        call step%begin(i)
        call spin(5)
        call step%end()
    end do
    call scope%end()
    call rp%stop()

    call rp%fetch_exclusive_region_times()
    call report('exclusive', 'f.outer')
    call report('exclusive', 'heavy')
    call report('exclusive', 'total.regions', rp%total_region_time())
    call report('exclusive', 'total.profile', rp%total_profiling_time())
    call rp%fetch_inclusive_region_times()
    call report('inclusive', 'f.outer')
    call report('inclusive', 'heavy')
    call rp%fetch_exclusive_region_times('f.step')
    call report('f.step', '2')
    call report('f.step', 'f.outer')
    call rp%clear()
    call rp%fetch_inclusive_region_times()
    call report('cleared', 'total.profile', rp%total_profiling_time())
    call rp%delete()

    call kind%delete()
    call step%delete()
    call mgr%flush()
    call mgr%delete()
    write(*, '(a)') 'types: done'

contains

    ! Busy for ms milliseconds of wall-clock time.
    subroutine spin(ms)
        integer, intent(in) :: ms
        integer(8) :: start, now, rate
        call system_clock(start, rate)
        do
            call system_clock(now)
            if ((now - start) * 1000 >= ms * rate) exit
        end do
    end subroutine

    ! Prints a region's time of the last fetch, or the given time.
    subroutine report(what, region, t)
        character(len=*), intent(in) :: what, region
        real(C_DOUBLE), intent(in), optional :: t
        real(C_DOUBLE) :: seconds
        if (present(t)) then
            seconds = t
        else
            seconds = rp%region_time(region)
        end if
        write(*, '(a, 1x, a, 1x, a, 1x, es23.16)') 'time', what, region, seconds
    end subroutine
end program types
