var searchData=
[
  ['mpx_5fcublas_5fcheck_0',['MPX_CUBLAS_CHECK',['../check_8hpp.html#a1b1840dc17ebf1cd44f5716c14e08d91',1,'check.hpp']]],
  ['mpx_5fcuda_5fcheck_1',['MPX_CUDA_CHECK',['../check_8hpp.html#a7d69102094f7d89c85e566a4aa404c77',1,'check.hpp']]],
  ['mpx_5fcuda_5fcheck_5flaunch_2',['MPX_CUDA_CHECK_LAUNCH',['../launch_8cuh.html#ac4a5cc9ef53437f9b1a72ab3e7b5a26e',1,'launch.cuh']]],
  ['mpx_5fcuda_5fcompiler_3',['MPX_CUDA_COMPILER',['../config_8hpp.html#aff1ed6d12fd329cc8cbf142b58cc05a1',1,'config.hpp']]],
  ['mpx_5fdevice_5fpass_4',['MPX_DEVICE_PASS',['../config_8hpp.html#a824d7419941f7137b52c93d322177648',1,'config.hpp']]],
  ['mpx_5fhost_5fdevice_5',['MPX_HOST_DEVICE',['../config_8hpp.html#adea184b90510afaf9bea269fa1753670',1,'config.hpp']]],
  ['mpx_5fversion_6',['MPX_VERSION',['../config_8hpp.html#af05fb80751772698e0e5015dfa71f77e',1,'config.hpp']]],
  ['mpx_5fversion_5fmajor_7',['MPX_VERSION_MAJOR',['../config_8hpp.html#a27da626908c989d92c4b88507801861d',1,'config.hpp']]],
  ['mpx_5fversion_5fminor_8',['MPX_VERSION_MINOR',['../config_8hpp.html#a3afdfc406672ba7abb71200898b7bbc0',1,'config.hpp']]],
  ['mpx_5fversion_5fpatch_9',['MPX_VERSION_PATCH',['../config_8hpp.html#ad57e11314215b47d6fd9200301a0f468',1,'config.hpp']]]
];
