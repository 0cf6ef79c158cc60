var searchData=
[
  ['data_0',['data',['../classmpx_1_1cuda_1_1DeviceArray.html#a694708c9712e07945ebb4830c9d7aa0c',1,'mpx::cuda::DeviceArray::data()'],['../classmpx_1_1io_1_1SafetensorsFile.html#ac36b79c0ee6d4bda53a15371e801eaae',1,'mpx::io::SafetensorsFile::data()'],['../classmpx_1_1Tensor.html#a0a04c16dca67bcfd70fea5e921b8b542',1,'mpx::Tensor::data() noexcept'],['../classmpx_1_1Tensor.html#a40fafe3f13a66e7d45f8b95762257170',1,'mpx::Tensor::data() const noexcept'],['../classmpx_1_1cuda_1_1DeviceArray.html#a2f89e6282babfdc2d8909e8c8a61643a',1,'mpx::cuda::DeviceArray::data()']]],
  ['dataset_1',['Dataset',['../classmpx_1_1data_1_1Dataset.html#ae53e2f11f418f11ad46c1adcd6bf2d5e',1,'mpx::data::Dataset::Dataset()=default'],['../classmpx_1_1data_1_1Dataset.html#a7ca83db4c2ca09f08c2e95a532bc63d0',1,'mpx::data::Dataset::Dataset(Tensor&lt; float, Host &gt; images, std::vector&lt; std::int32_t &gt; labels, std::int32_t classes)']]],
  ['default_5fcublaslt_5fworkspace_5fbytes_2',['default_cublaslt_workspace_bytes',['../context_8hpp.html#a0cf87745efbf577e22f6bb10d8df046b',1,'mpx']]],
  ['default_5ffashion_5fmnist_5fdir_3',['default_fashion_mnist_dir',['../fashion__mnist_8hpp.html#ad932246f8bae0565530ab15fe79db0f7',1,'mpx::data']]],
  ['device_4',['device',['../classmpx_1_1CudaContext.html#ac546163fbd0195b69a60b464df9abecc',1,'mpx::CudaContext']]],
  ['device_5fspan_5',['device_span',['../classmpx_1_1cuda_1_1DeviceArray.html#a7fc904b0553a16d4fcf068162cc359c6',1,'mpx::cuda::DeviceArray']]],
  ['devicearray_6',['DeviceArray',['../classmpx_1_1cuda_1_1DeviceArray.html#a3d79edf7f3b35a4a49d47721f6709dc0',1,'mpx::cuda::DeviceArray::DeviceArray()=default'],['../classmpx_1_1cuda_1_1DeviceArray.html#a2f50d59ba855533a2f1dd7e16bcd2fac',1,'mpx::cuda::DeviceArray::DeviceArray(DeviceArray &amp;&amp;other) noexcept'],['../classmpx_1_1cuda_1_1DeviceArray.html#ab20de8f61654526e4ba3043b77930c42',1,'mpx::cuda::DeviceArray::DeviceArray(std::span&lt; const T &gt; values)'],['../classmpx_1_1cuda_1_1DeviceArray.html#a2441bb31476d93160bef2ac266cc7d1e',1,'mpx::cuda::DeviceArray::DeviceArray(std::size_t count)']]],
  ['download_7',['download',['../classmpx_1_1cuda_1_1DeviceArray.html#ab945a347240999fd9e4594be1ed64e44',1,'mpx::cuda::DeviceArray']]],
  ['dtype_5fname_8',['dtype_name',['../safetensors_8hpp.html#a210a80a14917259465470681aa8a0e4e',1,'mpx::io']]],
  ['dtype_5fsize_9',['dtype_size',['../safetensors_8hpp.html#aa95bc95e230eb105d6ebc883951cf0c2',1,'mpx::io']]]
];
