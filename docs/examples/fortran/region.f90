! Regions and a ConfigManager from Fortran, through the caliper_mod module.
program region
  use caliper_mod
  implicit none
  type(ConfigManager) :: mgr
  integer :: i, j
  double precision :: total = 0

  mgr = ConfigManager_new()
  call mgr%add('runtime-report')
  if (mgr%error()) print *, 'Caliper config error: ', mgr%error_msg()
  call mgr%start()

  call cali_begin_region('main')
  do i = 1, 4
    call cali_begin_region('work')
    do j = 1, 1000000
      total = total + j * 0.5d0
    end do
    call cali_end_region('work')
  end do
  call cali_end_region('main')

  print '(a,es12.5)', 'sum ', total
  call mgr%flush()
  call ConfigManager_delete(mgr)
end program region
