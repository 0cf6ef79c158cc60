var searchData=
[
  ['empty_0',['empty',['../classmpx_1_1cuda_1_1DeviceArray.html#a064911748f74488d74cdffb84bfc873f',1,'mpx::cuda::DeviceArray::empty()'],['../classmpx_1_1cuda_1_1Graph.html#a8bb7ef570c890847b8113eddf27837ca',1,'mpx::cuda::Graph::empty()'],['../classmpx_1_1nn_1_1SavedPointer.html#a49ba0bfe881e3f740fb9cba46113bce3',1,'mpx::nn::SavedPointer::empty()'],['../classmpx_1_1Tensor.html#a63d2ab34e62f95f8041cb97e5e76a5c3',1,'mpx::Tensor::empty()']]],
  ['encode_5fsafetensors_1',['encode_safetensors',['../safetensors_8hpp.html#a578d4ded8a6bf39c072e55ac16d59538',1,'mpx::io']]],
  ['end_5fstep_2',['end_step',['../classmpx_1_1TrainingState_3_01Cuda_00_01Grad_01_4.html#ae6dfd0f864a8f52b285d1bcd441a3412',1,'mpx::TrainingState&lt; Cuda, Grad &gt;']]],
  ['enqueue_5fstep_3',['enqueue_step',['../classmpx_1_1optim_1_1AdamW.html#a6ccfddd8733152c60c655f11ec66ead7',1,'mpx::optim::AdamW::enqueue_step()'],['../classmpx_1_1optim_1_1SGD.html#a1c50a3feebdf68615f73ee9118089a81',1,'mpx::optim::SGD::enqueue_step()'],['../classmpx_1_1Trainer.html#af10a29bf1de4808ef9eb85e8f9eda0f3',1,'mpx::Trainer::enqueue_step(const Tensor&lt; input_element, Device &gt; &amp;inputs, target_type targets)'],['../classmpx_1_1Trainer.html#ad85b2463c5c0b39e7ba33b352831cab4',1,'mpx::Trainer::enqueue_step(const Tensor&lt; float, Device &gt; &amp;inputs, target_type targets)'],['../classmpx_1_1Trainer.html#ae0fa8eaf17de523f276ceaf60f8d89ce',1,'mpx::Trainer::enqueue_step(std::span&lt; const Batch &gt; micro_batches)']]],
  ['ensure_5fshape_4',['ensure_shape',['../layer_8hpp.html#a5e9cd6753f7429f7cd72a2ffb0ae0f5e',1,'mpx::nn']]],
  ['epoch_5',['epoch',['../classmpx_1_1data_1_1Batcher.html#ae38f42358d541bbcc772c0e6a4aa080d',1,'mpx::data::Batcher']]],
  ['evaluate_6',['evaluate',['../classification_8hpp.html#a3f8ab992ce014cf6eca95273610fdd90',1,'mpx::experiment']]]
];
