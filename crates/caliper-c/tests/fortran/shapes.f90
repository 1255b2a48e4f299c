! caliper_mod in the shapes programs written for the reference use it:
! procedures that receive the objects intent(in) and read them (error,
! error_msg, region_time), handles copied with get_instance /
! set_instance and compared with .eq. / .ne., the constructors under the
! types' names, and an optional argument left out. It calls only the
! module's procedures, never a C function directly. Prints a
! runtime-report (stdout), the times it read, and "shapes: done".
program shapes
    use caliper_mod
    implicit none
    type(ConfigManager) :: mgr, alias, none
    type(Annotation) :: phase, phase_alias
    type(ScopeAnnotation) :: scope
    type(BufferedRegionProfile) :: rp

    mgr = ConfigManager()
    call mgr%add('runtime-report(output=stdout)')
    call check_config(mgr)
    call bad_config()

    ! A second handle on the same manager.
    call alias%set_instance(mgr%get_instance())
    if (.not. (alias%associated() .and. alias .eq. mgr) .or. alias .ne. mgr) stop 11
    if (none%associated() .or. none .eq. mgr .or. none .eq. none) stop 12
    call alias%start()

    rp = BufferedRegionProfile()
    call rp%start()
    scope = ScopeAnnotation('s.outer')
    phase = Annotation('s.phase', CALI_ATTR_NESTED)
    call phase_alias%set_instance(phase%get_instance())
    call phase_alias%begin('s.inner')
    call cali_begin_region('s.leaf')
    call cali_end_region('s.leaf')
    call phase_alias%end()
    ! Forgets the borrowed object; the owner deletes it.
    call phase_alias%delete()
    if (phase_alias%associated() .or. .not. phase%associated()) stop 13
    call phase%delete()
    call scope%end()
    call rp%stop()
    call rp%fetch_inclusive_region_times()
    call print_times(rp)

    call alias%flush()
    ! Forgets the manager; the owner deletes it.
    call alias%delete()
    call mgr%delete()
    write(*, '(a)') 'shapes: done'

contains

    subroutine check_config(m)
        type(ConfigManager), intent(in) :: m
        if (m%error()) then
            write(*, '(a, a)') 'config error: ', m%error_msg()
            stop 10
        end if
    end subroutine

    ! A config the manager refuses: its message, read through intent(in).
    subroutine bad_config()
        type(ConfigManager) :: m
        m = ConfigManager_new()
        call m%add('no-such-config')
        call print_error(m)
        call m%delete()
    end subroutine

    subroutine print_error(m)
        class(ConfigManager), intent(in) :: m
        if (m%error()) write(*, '(a, a)') 'error: ', m%error_msg()
    end subroutine

    subroutine print_times(p)
        type(BufferedRegionProfile), intent(in) :: p
        write(*, '(a, l1)') 'time s.outer>0: ', p%region_time('s.outer') > 0
        write(*, '(a, l1)') 'time total>=s.outer: ', p%total_region_time() >= p%region_time('s.outer')
    end subroutine
end program shapes
