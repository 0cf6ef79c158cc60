var searchData=
[
  ['on_5fallocate_0',['on_allocate',['../classmpx_1_1MemoryStats.html#a205a55d6c6b2ca74a4cf6b3625902481',1,'mpx::MemoryStats']]],
  ['on_5ffree_1',['on_free',['../classmpx_1_1MemoryStats.html#abf08c25b4fefccc7cc22a0499709e0f9',1,'mpx::MemoryStats']]],
  ['operator_2a_2',['operator*',['../classmpx_1_1nn_1_1SavedPointer.html#a9b0b91d025ac189dd481f1cdc21dcd79',1,'mpx::nn::SavedPointer']]],
  ['operator_2d_3e_3',['operator-&gt;',['../classmpx_1_1nn_1_1SavedPointer.html#a627b30bb907c28268940a6bf56b5fee7',1,'mpx::nn::SavedPointer']]],
  ['operator_3d_4',['operator=',['../classmpx_1_1Tensor.html#a3db4ff419e981b7b810d72e105ba2291',1,'mpx::Tensor::operator=()'],['../classmpx_1_1nn_1_1SavedPointer.html#a709d299dba6f17aef9aff1ab41c04a22',1,'mpx::nn::SavedPointer::operator=(const T *pointer) noexcept'],['../classmpx_1_1nn_1_1SavedPointer.html#af8acfdce6ffe053d97b9642da776f456',1,'mpx::nn::SavedPointer::operator=(SavedPointer &amp;&amp;) noexcept'],['../classmpx_1_1cuda_1_1Graph.html#a09802eefa273602e9e9bacbb4876e193',1,'mpx::cuda::Graph::operator=()'],['../classmpx_1_1cuda_1_1DeviceArray.html#a7575b2ae4daa91f9a1e1caa599d5286b',1,'mpx::cuda::DeviceArray::operator=()']]],
  ['operator_5b_5d_5',['operator[]',['../classmpx_1_1Shape.html#a1c71277118e4923c16064c45265f5222',1,'mpx::Shape::operator[]()'],['../classmpx_1_1Tensor.html#a042795079d7ea515372108e5b80bac73',1,'mpx::Tensor::operator[](std::int64_t index) noexcept'],['../classmpx_1_1Tensor.html#a3d0d361ab53c58ced788a87c86e9ad5e',1,'mpx::Tensor::operator[](std::int64_t index) const noexcept']]],
  ['optimizer_6',['optimizer',['../classmpx_1_1Trainer.html#a6db0fecca1602ac168487f8943180c53',1,'mpx::Trainer']]],
  ['options_7',['options',['../classmpx_1_1data_1_1Batcher.html#acc8c037506778fed80396fc5adec9a8a',1,'mpx::data::Batcher::options()'],['../classmpx_1_1LossScaler.html#ab4a73ca52d56daf0b3a68f4ed50daa1c',1,'mpx::LossScaler::options()']]],
  ['order_8',['order',['../classmpx_1_1data_1_1Batcher.html#a9a1b3acfc66ced76fbc9e1f2671d43bc',1,'mpx::data::Batcher']]],
  ['out_5ffeatures_9',['out_features',['../classmpx_1_1nn_1_1Linear.html#a336cd062f55b56a797c524e4ed243216',1,'mpx::nn::Linear']]]
];
