"""The file names of the frameworks' and Python's own modules, where a Python frame is not the user's.

Written by tools/gen_framework_files.py from tensorflow 2.21.0, keras 3.15.1, jax 0.10.2, jaxlib 0.10.2, numpy
2.4.6, absl 2.5.1, ml_dtypes 0.7.0 and Python 3.11.7's standard library.
Rerun it when a framework adds modules.
"""

FRAMEWORK_FILES = frozenset(
    """
ElementInclude.py ElementPath.py ElementTree.py NodeFilter.py __config__.py __future__.py __hello__.py __init__.py
__main__.py __version__.py _abc.py _adapters.py _add_docstring.py _add_newdocs.py _add_newdocs_scalars.py _aix.py
_aix_support.py _argument_parser.py _arith_enum_gen.py _arith_ops_gen.py _array_api_info.py _array_like.py
_array_utils_impl.py _arraypad_impl.py _arraysetops_impl.py _arrayterator_impl.py _asarray.py _backend.py _base.py
_bazelize_command.py _bootstrap.py _bootstrap_external.py _bootsubprocess.py _builtin_ops_gen.py _casefix.py
_cf_ops_gen.py _char_codes.py _chlo_ops_gen.py _collections.py _collections_abc.py _common.py _compat_pickle.py
_compiler.py _compression.py _configtool.py _constants.py _convertions.py _core.py _ctypeslib.py _datasource.py
_defines.py _distributor_init.py _distutils.py _dtype.py _dtype_ctypes.py _dtype_like.py _encoded_words.py _endian.py
_exceptions.py _expired_attrs_2_0.py _export.py _extended_precision.py _finfo.py _flag.py _flagvalues.py _format_impl.py
_func_ops_gen.py _function_base_impl.py _functools.py _globals.py _gpu_enum_gen.py _gpu_ops_gen.py
_header_value_parser.py _helper.py _helpers.py _histograms_impl.py _iinfo.py _index_tricks_impl.py _inspect.py
_internal.py _iotools.py _isocbind.py _itertools.py _lbfgs.py _legacy.py _linalg.py _llvm_enum_gen.py _llvm_ops_gen.py
_locales.py _log.py _lowerings.py _markupbase.py _math_ops_gen.py _memref_ops_gen.py _meson.py _meta.py _methods.py
_mhlo_ops_gen.py _mosaic_gpu_gen_enums.py _mosaic_gpu_gen_ops.py _mpmd_ops_gen.py _msvccompiler.py _multiarray_umath.py
_nanfunctions_impl.py _natype.py _nbit.py _nbit_base.py _nested_sequence.py _npyio_impl.py _nvgpu_enum_gen.py
_nvgpu_ops_gen.py _nvvm_enum_gen.py _nvvm_ops_gen.py _ods_common.py _osx_support.py _parseaddr.py _parser.py _pep440.py
_pickle.py _pocketfft.py _policybase.py _polybase.py _polynomial_impl.py _pretty_print_reporter.py _py_abc.py
_pydecimal.py _pyio.py _pytesttester.py _pywrap_analyzer_wrapper.py _pywrap_modify_model_interface.py
_pywrap_string_util.py _pywrap_tensorflow_interpreter_wrapper.py _pywrap_tensorflow_lite_calibration_wrapper.py
_pywrap_tensorflow_lite_metrics_wrapper.py _re.py _scalars.py _scf_ops_gen.py _scimath_impl.py _sdy_enums_gen.py
_sdy_ops_gen.py _shape.py _shape_base_impl.py _shell_utils.py _sitebuiltins.py _sparse_tensor_enum_gen.py
_sparse_tensor_ops_gen.py _src_pyf.py _stablehlo_ops_gen.py _stride_tricks_impl.py _string_helpers.py _strptime.py
_sysconfigdata__linux_x86_64-linux-gnu.py _text.py _threading_local.py _tpu_enum_gen.py _tpu_ops_gen.py
_triton_enum_gen.py _triton_ops_gen.py _twodim_base_impl.py _type_aliases.py _type_check_impl.py _types.py _tzpath.py
_ufunc.py _ufunc_config.py _ufunclike_impl.py _uninstall.py _user_array_impl.py _utils.py _utils_impl.py _validators.py
_validators_classes.py _vector_enum_gen.py _vector_ops_gen.py _version.py _weakrefset.py _zoneinfo.py abc.py absltest.py
absoft.py abstract_arrays.py accelerator_util.py accuracy_metrics.py accuracy_metrics_test.py activation.py
activation_test.py activations.py activations_test.py activity.py activity_regularization.py
activity_regularization_test.py ad.py ad_checkpoint.py ad_util.py adadelta.py adadelta_test.py adafactor.py
adafactor_test.py adagrad.py adagrad_da.py adagrad_test.py adam.py adam_test.py adamax.py adamax_test.py adamw.py
adamw_test.py adaptive_average_pooling1d.py adaptive_average_pooling2d.py adaptive_average_pooling3d.py
adaptive_max_pooling1d.py adaptive_max_pooling2d.py adaptive_max_pooling3d.py adaptive_pooling1d_test.py
adaptive_pooling2d_test.py adaptive_pooling3d_test.py add.py additive_attention.py additive_attention_test.py
advanced_activations.py ag_ctx.py ag_logging.py aifc.py aliases.py all_gather.py all_gather_mgpu.py all_reduce.py
all_renames_v2.py all_util.py all_utils.py allocation_description_pb2.py alpha_dropout.py alpha_dropout_test.py
analytics.py analyzer.py analyzer_cli.py anf.py ann.py anno.py annos.py annotate_data_placement.py annotation_types.py
antigravity.py api.py api_def_pb2.py api_export.py api_util.py app.py application.py applications_test.py
archive_util.py argparse.py argparse_flags.py argument_validation.py arith.py arithmetic.py arm.py armccompiler.py
array.py array_api_metadata.py array_constructors.py array_creation.py array_data_adapter.py array_data_adapter_test.py
array_grad.py array_like.py array_methods.py array_ops.py array_ops_stack.py array_slicing.py array_utils.py
arrayprint.py arrayterator.py ascii.py asserts.py asset.py ast.py ast_edits.py ast_util.py async_case.py
async_checkpoint_helper.py asynchat.py asyncore.py atomic_function.py attention.py attention_mgpu.py attention_test.py
attr_value_pb2.py attributes.py audio.py audio_dataset_utils.py audio_dataset_utils_test.py audio_microfrontend_op.py
aug_mix.py aug_mix_test.py authoring.py auto_contrast.py auto_contrast_test.py auto_control_deps.py
auto_control_deps_utils.py autocast_variable.py autocomplete.py autocomplete_w.py autodist.py autoexpand.py
autograph_ops.py autograph_util.py autotrackable.py auxfuncs.py average.py average_pooling1d.py average_pooling2d.py
average_pooling3d.py average_pooling_test.py awq.py awq_config.py awq_config_test.py awq_core.py awq_test.py backend.py
backend_config.py backend_utils.py backend_utils_test.py backprop.py backprop_util.py backup_and_restore.py
backup_and_restore_test.py bad_order.py base.py base64.py base64_codec.py base64mime.py base_adaptive_pooling.py
base_conv.py base_conv_transpose.py base_delegate.py base_depthwise_conv.py base_events.py base_futures.py
base_global_pooling.py base_image_preprocessing_layer.py base_image_preprocessing_layer_test.py base_layer.py
base_layer_utils.py base_layer_v1.py base_merge.py base_optimizer.py base_pooling.py base_preprocessing_layer.py
base_separable_conv.py base_serialization.py base_subprocess.py base_tasks.py base_ui.py basearray.py
basic_definitions.py basic_loops.py basic_session_run_hooks.py batch_normalization.py batch_normalization_test.py
batch_op.py batch_ops.py batching.py bcoo.py bcppcompiler.py bcsr.py bdb.py bdist.py bdist_dumb.py bdist_rpm.py
benchmark.py benchmark_base.py benchmarks_test_base.py bernoulli.py beta.py betabinom.py betaln.py bfc_memory_map_pb2.py
bfgs.py bfloat16.py bias_op_base.py bidirectional.py bidirectional_test.py big5.py big5hkscs.py bijector.py
bijector_impl.py bijector_test_util.py bincount_ops.py binom.py bisect.py bitwise_ops.py blackwell_matmul_mgpu.py
blackwell_ragged_dot_mgpu.py block_spec.py blocked_sampler.py bom.py boosted_trees_ops.py boston_housing.py
bounding_box.py break_statements.py browser.py btm_matcher.py btm_utils.py buffer_callback.py build.py build_clib.py
build_ext.py build_info.py build_py.py build_scripts.py build_src.py builder.py builder_impl.py builtin.py
byte_swap_tensor.py bytedesign.py bz2.py bz2_codec.py cElementTree.py cProfile.py c_api_util.py cache.py cache_key.py
cache_op.py calendar.py calibration_algorithm.py calibration_statistics_pb2.py calibrator.py california_housing.py
call_tf.py call_trees.py callback.py callback_list.py callback_test.py callbacks.py callbacks_v1.py calltip.py
calltip_w.py cancellation.py candidate_sampling_ops.py capi_maps.py capture_container.py cardinality.py case.py
categorical.py category_encoding.py category_encoding_test.py cauchy.py cb_rules.py ccompiler.py ccompiler_opt.py
center_crop.py center_crop_test.py central_storage_strategy.py cf.py cfg.py cfuncs.py cgi.py cgitb.py chaos.py
charmap.py charset.py chebyshev.py check.py check_numerics_callback.py check_ops.py checkify.py checkpoint.py
checkpoint_adapter.py checkpoint_context.py checkpoint_management.py checkpoint_ops.py checkpoint_options.py
checkpoint_state_pb2.py checkpoint_test_base.py checkpoint_utils.py checkpoint_view.py chi2.py chlo.py
choose_from_datasets_op.py chunk.py cifar.py cifar10.py cifar100.py clahe.py clahe_test.py clean.py cli_config.py
cli_debugger.py cli_shared.py cli_test_utils.py client.py client_lib.py clip_ops.py clock.py cloning.py cloning_test.py
cloud_tpu_cluster.py cloud_tpu_init.py cluster.py cluster_coordinator.py cluster_pb2.py cluster_resolver.py
clustering_ops.py cmd.py code.py code_stats.py code_stats_test.py codecontext.py codecs.py codeop.py colab_debugger.py
colab_lib.py collect_profile.py collective_all_reduce_strategy.py collective_matmul_mgpu.py collective_ops.py
collective_util.py colorchooser.py colorizer.py colormixer.py colorsys.py combinations.py command_name.py
command_parser.py common.py common_rules.py common_shapes.py commondialog.py compaq.py compare.py comparisons.py
compat.py compilation_cache.py compilation_cache_interface.py compilation_result_pb2.py compile_utils.py
compile_utils_test.py compileall.py compiler.py compiler_ir.py composite_tensor.py composite_tensor_gradient.py
composite_tensor_ops.py composite_tensor_utils.py composite_tensor_variant_pb2.py compression_ops.py compute_on.py
compute_output_spec_test.py concatenate.py concatenate_op.py concrete_function.py cond.py cond_v2.py
conditional_expressions.py conditionals.py config.py config_compiler.py config_key.py config_lib.py config_pb2.py
configdialog.py configparser.py conftest.py confusion_matrix.py confusion_metrics.py confusion_metrics_test.py
conjugate_gradient.py connection.py constant_initializers.py constant_initializers_test.py constant_op.py
constant_tensor_conversion.py constants.py constraints.py constraints_test.py contentmanager.py context.py
context_managers.py contextlib.py contextvars.py continue_statements.py control_deps.py control_flow.py
control_flow_assert.py control_flow_case.py control_flow_grad.py control_flow_ops.py control_flow_pb2.py
control_flow_state.py control_flow_switch_case.py control_flow_util.py control_flow_util_v2.py
control_flow_v2_func_graphs.py control_flow_v2_toggles.py conv.py conv1d.py conv1d_transpose.py conv2d.py
conv2d_transpose.py conv3d.py conv3d_transpose.py conv_lstm.py conv_lstm1d.py conv_lstm1d_test.py conv_lstm2d.py
conv_lstm2d_test.py conv_lstm3d.py conv_lstm3d_test.py conv_lstm_test.py conv_template.py conv_test.py
conv_transpose_test.py conv_utils.py conversion.py conversion_metadata_schema_py_generated.py convert.py
convert_phase.py convert_saved_model.py convert_to_constants.py converter.py converter_error_data_pb2.py
converter_flags_pb2.py converter_testing.py converters.py converters_test.py convnext.py convolution.py convolutional.py
convolutional_recurrent.py coo.py cookiejar.py cookies.py coordination_config_pb2.py coordinator.py
coordinator_context.py copy.py copyreg.py core.py core_platform_payloads_pb2.py core_test.py coroutines.py
correlation_metrics.py correlation_metrics_test.py cost_estimate.py cost_graph_pb2.py counter.py counter_op.py cp037.py
cp1006.py cp1026.py cp1125.py cp1140.py cp1250.py cp1251.py cp1252.py cp1253.py cp1254.py cp1255.py cp1256.py cp1257.py
cp1258.py cp273.py cp424.py cp437.py cp500.py cp720.py cp737.py cp775.py cp850.py cp852.py cp855.py cp856.py cp857.py
cp858.py cp860.py cp861.py cp862.py cp863.py cp864.py cp865.py cp866.py cp869.py cp874.py cp875.py cp932.py cp949.py
cp950.py cpp_shape_inference_pb2.py cpu_cholesky_lapack_potrf.py cpu_eig_lapack_geev.py cpu_eigh_lapack_syev.py
cpu_hessenberg_lapack_gehrd.py cpu_lu_lapack_getrf.py cpu_qr_lapack_geqrf.py cpu_schur_lapack_gees.py cpu_sparse.py
cpu_svd_lapack_gesdd.py cpu_triangular_solve_blas_trsm.py cpu_tridiagonal_lapack_sytrd_hetrd.py
cpu_tridiagonal_solve_lapack_gtsv.py cpuinfo.py crackfortran.py create_python_api.py critical_section_ops.py crlf.py
cropping1d.py cropping1d_test.py cropping2d.py cropping2d_test.py cropping3d.py cropping3d_test.py cross_device_ops.py
cross_device_utils.py crypt.py csr.py csv.py csv_logger.py csv_logger_test.py ctc_ops.py cuda_cholesky_solver_potrf.py
cuda_eigh_cusolver_syev.py cuda_lu_cusolver_getrf.py cuda_lu_pivots_to_permutation.py cuda_qr_cusolver_geqrf.py
cuda_svd_cusolver_gesvd.py cuda_threefry2x32.py cuda_tridiagonal_cusolver_sytrd.py cuda_tridiagonal_solve.py
cudnn_deterministic_base.py cudnn_rnn_grad.py custom_api_util.py custom_batching.py custom_derivatives.py
custom_evaluate.py custom_fusion_lib.py custom_gradient.py custom_nest_protocol.py custom_nest_trace_type.py
custom_partitioning.py custom_partitioning_sharding_rule.py cut_mix.py cut_mix_test.py cversions.py cygwinccompiler.py
d_checkpoint.py d_variable.py data.py data_adapter.py data_adapter_utils.py data_adapter_utils_test.py data_flow_grad.py
data_flow_ops.py data_layer.py data_layer_test.py data_service_ops.py data_service_pb2.py data_structures.py
data_utils.py dataclasses.py dataset_autograph.py dataset_creator.py dataset_metadata_pb2.py dataset_ops.py
dataset_options_pb2.py dataset_pb2.py dataset_utils.py dataset_utils_test.py datasets.py datetime.py dbapi2.py
dct_ops.py debug.py debug_data.py debug_event_pb2.py debug_events_monitors.py debug_events_reader.py
debug_events_writer.py debug_gradients.py debug_graphs.py debug_mode.py debug_options_pb2.py debug_pb2.py
debug_service_pb2.py debug_service_pb2_grpc.py debug_utils.py debugger.py debugger_cli_common.py
debugger_event_metadata_pb2.py debugger_r.py debugging.py debugobj.py debugobj_r.py decimal.py decode_attention.py
decoder.py decorator_utils.py decorators.py def_function.py default_gradient.py default_types.py default_types_pb2.py
defchararray.py defmatrix.py delegator.py dense.py dense_attention.py dense_test.py densenet.py dep_util.py
deprecated_module.py deprecated_module_new.py deprecation.py deprecation_module.py deprecations.py depthwise_conv1d.py
depthwise_conv2d.py depthwise_conv_op_base.py depthwise_conv_test.py develop.py device.py device_assignment.py
device_attributes_pb2.py device_compatibility_check.py device_context.py device_filters_pb2.py device_lib.py
device_properties_pb2.py device_scope_test.py device_setter.py device_spec.py device_util.py diagnose.py dialect.py
dialect_lowering.py dialects.py dialog.py different_encoding.py difflib.py dir_util.py directed_interleave_op.py
directives.py dirichlet.py dirichlet_multinomial.py dis.py discharge.py discretization.py discretization_test.py
dispatch.py dist.py distillation_loss.py distillation_loss_test.py distiller.py distiller_test.py distribute.py
distribute_config.py distribute_coordinator.py distribute_coordinator_context.py distribute_coordinator_utils.py
distribute_lib.py distribute_test.py distribute_utils.py distributed.py distributed_file_utils.py
distributed_runtime_payloads_pb2.py distributed_save_op.py distributed_training_utils.py
distributed_training_utils_v1.py distribution.py distribution_lib.py distribution_lib_test.py distributions.py dlpack.py
dmtree_impl.py dnd.py doc_controls.py doc_srcs.py doc_typealias.py doctest.py domreg.py dot.py draw_bounding_boxes.py
draw_segmentation_masks.py driver.py dropout.py dropout_rnn_cell.py dropout_rnn_cell_test.py dropout_test.py
dtensor_device.py dtensor_strategy_extended.py dtensor_util.py dtype.py dtype_policy.py dtype_policy_map.py
dtype_policy_map_test.py dtype_policy_test.py dtype_utils.py dtype_utils_test.py dtypes.py dtypes_test.py dumb.py
dump.py dumping_callback.py dumping_callback_test_lib.py dumping_wrapper.py dyld.py dylib.py dynamic_padding_pb2.py
dynamic_ragged_shape.py dynoption.py eager_function_run.py early_stopping.py early_stopping_test.py earray.py editor.py
effects.py efficientnet.py efficientnet_v2.py egg_info.py eigh.py einops.py einops_test.py einshape.py einsum.py
einsum_dense.py einsum_dense_test.py einsumfunc.py elu.py elu_test.py embedding.py embedding_context_utils.py
embedding_ops.py embedding_test.py embeddings.py encoder.py encoders.py entities.py enum.py enumerate_ops.py
environment.py environment_info.py epoch_iterator.py epoch_iterator_test.py equalization.py equalization_test.py
error.py error_check.py error_codes_pb2.py error_handling.py error_interpolation.py error_ops.py error_utils.py
errors.py errors_impl.py euc_jis_2004.py euc_jisx0213.py euc_jp.py euc_kr.py eval_jaxpr.py evaluation.py evaluator.py
event_file_writer.py event_file_writer_v2.py event_pb2.py events.py example_kernel.py example_parser_configuration.py
example_parser_configuration_pb2.py example_pb2.py exceptions.py exec_command.py execute.py executor.py expat.py
expatbuilder.py expatreader.py expon.py exponential.py export.py export_back_compat_test_util.py export_output.py
export_utils.py export_with_memory_space.py export_with_multiple_meshes.py export_with_specified_sharding.py
export_with_unspecified_sharding.py exported_api.py exported_model_pb2.py extbuild.py extending.py
extending_distributions.py extension.py extension_type.py extension_type_field.py extractor.py extras.py f2py2e.py
f90mod_rules.py f_score_metrics.py f_score_metrics_test.py failure_handling.py failure_handling_util.py
false_encoding.py fancy_getopt.py fashion_mnist.py fault_tolerance_test_base.py feature_column.py feature_column_lib.py
feature_column_v2.py feature_column_v2_types.py feature_pb2.py feature_space.py feature_space_test.py feedparser.py
ffi.py fft.py fft_ops.py file_editor.py file_editor_test.py file_io.py file_util.py file_utils.py file_utils_test.py
filecmp.py filedialog.py fileinput.py filelist.py filesystem_ops.py filter_op.py fingerprint_pb2.py fingerprinting.py
fingerprinting_utils.py fix_apply.py fix_asserts.py fix_basestring.py fix_buffer.py fix_dict.py fix_except.py
fix_exec.py fix_execfile.py fix_exitfunc.py fix_explicit.py fix_filter.py fix_first.py fix_funcattrs.py fix_future.py
fix_getcwdu.py fix_has_key.py fix_idioms.py fix_import.py fix_imports.py fix_imports2.py fix_input.py fix_intern.py
fix_isinstance.py fix_itertools.py fix_itertools_imports.py fix_last.py fix_long.py fix_map.py fix_metaclass.py
fix_methodattrs.py fix_ne.py fix_next.py fix_nonzero.py fix_numliterals.py fix_operator.py fix_paren.py fix_parrot.py
fix_preorder.py fix_print.py fix_raise.py fix_raw_input.py fix_reduce.py fix_reload.py fix_renames.py fix_repr.py
fix_set_literal.py fix_standarderror.py fix_sys_exc.py fix_throw.py fix_tuple_params.py fix_types.py fix_unicode.py
fix_urllib.py fix_ws_comma.py fix_xrange.py fix_xreadlines.py fix_zip.py fixer_base.py fixer_util.py fixes.py flags.py
flagsaver.py flash_attention.py flat_map_op.py flatbuffer_utils.py flatiter.py flatten.py flatten_test.py
flatten_util.py flexible_dtypes.py flops_registry.py fnmatch.py font.py forest.py forkserver.py format.py
format_converter_wrapper_pybind11.py format_helpers.py formats.py forwardprop.py forwardprop_util.py fractalcurves.py
fractions.py fragmented_array.py framework.py framework_lib.py freeze_graph.py from_generator_op.py from_list.py
from_sparse_tensor_slices_op.py from_template.py from_tensor_slices_op.py from_tensors_op.py fromnumeric.py
frozen_dict.py ftplib.py ftrl.py ftrl_test.py fujitsu.py fujitsuccompiler.py full_type_pb2.py func.py func2subr.py
func_backend.py func_graph.py function.py function_base.py function_cache.py function_context.py
function_def_to_graph.py function_deserialization.py function_pb2.py function_serialization.py function_test.py
function_type.py function_type_pb2.py function_type_utils.py function_utils.py function_wrappers.py functional.py
functional_ops.py functional_saver.py functional_test.py functions.py functools.py fused.py fused_attention_stablehlo.py
fuser.py fuser_utils.py fusible.py fusible_dtype.py fusion.py futures.py g95.py gamma.py gast_util.py
gaussian_dropout.py gaussian_dropout_test.py gaussian_noise.py gaussian_noise_test.py gb18030.py gb2312.py gbk.py
gce_cluster_resolver.py gen_array_ops.py gen_audio_microfrontend_op.py gen_audio_ops.py gen_batch_ops.py
gen_bitwise_ops.py gen_boosted_trees_ops.py gen_candidate_sampling_ops.py gen_check_preemption_op.py
gen_checkpoint_ops.py gen_clustering_ops.py gen_collective_ops.py gen_composite_tensor_ops.py gen_control_flow_ops.py
gen_count_ops.py gen_ctc_ops.py gen_cudnn_rnn_ops.py gen_data_flow_ops.py gen_dataset_ops.py gen_debug_ops.py
gen_decode_proto_ops.py gen_dtensor_ops.py gen_encode_proto_ops.py gen_experimental_dataset_ops.py gen_filesystem_ops.py
gen_functional_ops.py gen_html.py gen_image_ops.py gen_io_ops.py gen_linalg_ops.py gen_list_ops.py gen_logging_ops.py
gen_lookup_ops.py gen_manip_ops.py gen_map_ops.py gen_math_ops.py gen_mlir_passthrough_op.py gen_nccl_ops.py
gen_nn_ops.py gen_optional_ops.py gen_parsing_ops.py gen_ragged_array_ops.py gen_ragged_conversion_ops.py
gen_ragged_math_ops.py gen_random_index_shuffle_ops.py gen_random_ops.py gen_resource_variable_ops.py gen_rnn_ops.py
gen_rpc_ops.py gen_script_ops.py gen_sdca_ops.py gen_sendrecv_ops.py gen_set_ops.py gen_sparse_csr_matrix_ops.py
gen_sparse_ops.py gen_special_math_ops.py gen_spectral_ops.py gen_state_ops.py gen_stateful_random_ops.py
gen_stateless_random_ops.py gen_stateless_random_ops_v2.py gen_string_ops.py gen_summary_ops.py gen_sync_ops.py
gen_tpu_ops.py gen_tpu_partition_ops.py gen_training_ops.py gen_trt_ops.py gen_uniform_quant_ops.py gen_user_ops.py
gen_xla_ops.py generate_map.py generator.py generator_data_adapter.py generator_data_adapter_test.py generic_utils.py
genericpath.py gennorm.py geom.py get_layer_policy.py get_single_element.py getlimits.py getopt.py getpass.py gettext.py
gfile.py glob.py global_average_pooling1d.py global_average_pooling2d.py global_average_pooling3d.py
global_average_pooling_test.py global_max_pooling1d.py global_max_pooling2d.py global_max_pooling3d.py
global_max_pooling_test.py global_shuffle_op.py global_state.py global_state_test.py gmm.py gnu.py googletest.py gptq.py
gptq_config.py gptq_config_test.py gptq_core.py gptq_core_test.py gptq_test.py gpu_callbacks.py gpu_common_utils.py
gpu_eigh_solver_syev.py gpu_linalg.py gpu_prng.py gpu_rnn.py gpu_solver.py gpu_sparse.py gpu_triton.py gpu_util.py
gradient_checker.py gradient_checker_v2.py gradient_descent.py gradients.py gradients_impl.py gradients_util.py
grain_dataset_adapter.py grain_dataset_adapter_test.py grain_utils.py grammar.py graph_debug_info_pb2.py graph_io.py
graph_only_ops.py graph_pb2.py graph_to_function_def.py graph_transfer_info_pb2.py graph_util.py graph_util_impl.py
graph_view.py graphlib.py grep.py group_by_window_op.py group_normalization.py group_normalization_test.py
grouped_query_attention.py grouped_query_attention_test.py grouping.py grpc_debug_server.py grpc_debug_test_server.py
grpc_tensorflow_server.py grpc_wrapper.py gru.py gru_test.py gumbel_l.py gumbel_r.py gzip.py handle_data_util.py
handler.py handlers.py hardware_utils.py has_key.py hashable_array.py hashed_crossing.py hashed_crossing_test.py
hashing.py hashing_test.py hashlib.py hdf5_format.py header.py headerregistry.py headers.py heap.py heapq.py help.py
help_about.py helpers.py hermite.py hermite_e.py hex_codec.py hijax.py hinge_metrics.py hinge_metrics_test.py
histogram_ops.py histogram_pb2.py history.py hlo.py hlo_interpreter.py hlo_pb2.py hmac.py hook-numpy.py hooks.py
hopper_matmul_mgpu.py hopper_mixed_type_matmul_mgpu.py hp_roman8.py hpux.py htest.py hyperparser.py hz.py ibm.py
identity.py identity_bijector.py identity_test.py idle.py idna.py ifrt_programs.py ignore_errors_op.py image.py
image_dataset_utils.py image_dataset_utils_test.py image_grad.py image_grad_test_base.py image_ops.py image_ops_impl.py
image_test.py image_utils.py image_utils_test.py imagenet_utils.py imagenet_utils_test.py imaplib.py imdb.py imghdr.py
immutable_dict.py imp.py imperative_grad.py import_pb_to_tensorboard.py importer.py inception_resnet_v2.py
inception_v3.py index_lookup.py index_lookup_test.py index_tricks.py indexed_slices.py indexing.py inference_utils.py
infinite_recursion.py init_ops.py init_ops_v2.py initializer.py initializer_test.py initializers.py initializers_ns.py
initializers_v1.py initializers_v2.py inplace_ops.py input.py input_layer.py input_layer_test.py input_lib.py
input_ops.py input_spec.py input_util.py inspect.py inspect_checkpoint.py inspect_utils.py install.py install_clib.py
install_data.py install_egg_info.py install_headers.py install_lib.py install_scripts.py integer_lookup.py
integer_lookup_test.py integrate.py intel.py intelccompiler.py interleave_op.py interleave_ops.py internal.py
interpolate.py interpret_pallas_call.py interpreter.py introspect.py io.py io_ops.py io_utils.py io_utils_test.py
iomenu.py iou.py iou_metrics.py iou_metrics_test.py iou_test.py ipaddress.py ipynb.py ir.py is_in_graph_mode.py
iso2022_jp.py iso2022_jp_1.py iso2022_jp_2.py iso2022_jp_2004.py iso2022_jp_3.py iso2022_jp_ext.py iso2022_kr.py
iso8859_1.py iso8859_10.py iso8859_11.py iso8859_13.py iso8859_14.py iso8859_15.py iso8859_16.py iso8859_2.py
iso8859_3.py iso8859_4.py iso8859_5.py iso8859_6.py iso8859_7.py iso8859_8.py iso8859_9.py item.py iterator_autograph.py
iterator_model_ops.py iterator_ops.py iterators.py jax2tf.py jax_layer.py jax_layer_test.py
jax_multi_process_distribution_test.py jax_to_ir.py jax_utils.py jaxpr.py jaxpr_fusion.py jaxpr_interpret.py
jaxpr_util.py jet.py jit.py johab.py json_utils.py json_utils_test.py k8s_cluster.py kde.py keras_deps.py
keras_parameterized.py keras_saveable.py keras_tensor.py keras_tensor_test.py kernel.py kernel_def_pb2.py
kernelized_utils.py kernels.py keyword.py keyword_args.py koi8_r.py koi8_t.py koi8_u.py kubernetes_cluster_resolver.py
kullback_leibler.py kz1048.py laguerre.py lahey.py lamb.py lamb_test.py lambda_callback.py lambda_callback_test.py
lambda_layer.py lambda_layer_test.py lapack.py laplace.py latin_1.py launch_context.py lax.py lax_numpy.py
lax_reference.py lax_test_util.py layer.py layer_norm.py layer_normalization.py layer_normalization_test.py
layer_serialization.py layer_test.py layer_utils.py layers.py layout.py layout_defs.py layout_inference.py layout_pb2.py
layouts.py lazy_loader.py lazy_test_submodule.py leaky_relu.py leaky_relu_test.py learning_rate_decay.py
learning_rate_schedule.py learning_rate_schedule_test.py learning_rate_scheduler.py learning_rate_scheduler_test.py
legacy_h5_format.py legacy_h5_format_test.py legacy_learning_rate_decay.py legendre.py lib2def.py lib_user_array.py
lib_utils.py lib_version.py lift_to_graph.py linalg.py linalg_grad.py linalg_impl.py linalg_ops.py linalg_ops_impl.py
linalg_test.py lindenmayer.py line_endings.py line_search.py linear_operator.py linear_operator_addition.py
linear_operator_adjoint.py linear_operator_block_diag.py linear_operator_block_lower_triangular.py
linear_operator_circulant.py linear_operator_composition.py linear_operator_diag.py linear_operator_full_matrix.py
linear_operator_householder.py linear_operator_identity.py linear_operator_inversion.py linear_operator_kronecker.py
linear_operator_low_rank_update.py linear_operator_lower_triangular.py linear_operator_permutation.py
linear_operator_test_util.py linear_operator_toeplitz.py linear_operator_tridiag.py linear_operator_util.py
linear_operator_zeros.py linear_util.py linecache.py lion.py lion_test.py list_ops.py lists.py lite.py lite_constants.py
literal.py literals.py litert.py litert_test.py litert_torch_test.py liveness.py llvm.py load.py load_context.py
load_library.py load_op.py load_options.py load_v1_in_v2.py loader.py loader_impl.py local_cli_wrapper.py locale.py
lock_util.py locks.py log.py log_memory_pb2.py logging_config.py logging_ops.py logical.py logical_expressions.py
logistic.py lookup_grad.py lookup_ops.py loops.py loss.py loss_scale.py loss_scale_optimizer.py
loss_scale_optimizer_test.py loss_test.py losses.py losses_impl.py losses_test.py losses_utils.py lowering.py
lru_cache.py lstm.py lstm_test.py lzma.py ma.py mac_arabic.py mac_croatian.py mac_cyrillic.py mac_farsi.py mac_greek.py
mac_iceland.py mac_latin2.py mac_roman.py mac_romanian.py mac_turkish.py machinery.py macosx.py mailbox.py mailcap.py
main.py main_op.py main_op_impl.py mainmenu.py managers.py manip_grad.py manip_ops.py map_defun.py map_fn.py map_op.py
map_ops.py masking.py masking_test.py matching_files.py math.py math_grad.py math_ops.py math_test.py matlib.py
matmul.py max_num_bounding_box.py max_num_bounding_box_test.py max_pooling1d.py max_pooling2d.py max_pooling3d.py
max_pooling_test.py maximum.py mbcs.py mel_ops.py mel_spectrogram.py mel_spectrogram_test.py memmap.py
memmapped_file_system_pb2.py memory_checker.py memory_test_util.py memref.py merge.py merge_call_interim.py
merging_test.py mesh.py mesh_util.py mesh_utils.py message.py messagebox.py meta.py meta_graph.py meta_graph_pb2.py
method_name_updater.py metric.py metric_serialization.py metric_test.py metric_utils.py metrics.py metrics_impl.py
metrics_interface.py metrics_pb2.py metrics_utils.py metrics_wrapper.py mfcc_ops.py mhlo.py mimetypes.py
mingw32ccompiler.py minicompat.py minidom.py minimal_hanoi.py minimize.py minimum.py mips.py mirrored_run.py
mirrored_strategy.py misc.py misc_util.py mix_up.py mix_up_test.py mixed_precision.py mixed_precision_global_state.py
mixins.py mlir.py mma.py mma_utils.py mnist.py mobilenet.py mobilenet_v2.py mobilenet_v3.py mock.py mock_idle.py
mock_tk.py mod.py mode_keys.py model.py model_analyzer.py model_checkpoint.py model_checkpoint_test.py model_config.py
model_flags_pb2.py model_pb2.py model_runtime_info_pb2.py model_serialization.py model_test.py model_visualization.py
models.py module.py module_deprecations_v2.py module_util.py module_utils.py module_wrapper.py modulefinder.py
modules.py momentum.py monitor_callback.py monitor_callback_test.py monitored_session.py monitoring.py
mosaic_boolean_constant.py mosaic_gpu.py mosaic_gpu_add_one.py mosaic_matmul.py mosaic_semaphore_dma.py
moving_averages.py mpi4py_cluster.py mpmd.py mrecords.py msvc9compiler.py msvccompiler.py multi_client_test_util.py
multi_device_iterator_ops.py multi_head_attention.py multi_head_attention_test.py multi_optimizer.py
multi_optimizer_test.py multi_process_cluster.py multi_process_lib.py multi_process_runner.py
multi_worker_mirrored_strategy.py multi_worker_test_base.py multi_worker_util.py multiarray.py multicall.py
multihost_utils.py multinomial.py multipart.py multiply.py multivariate_normal.py muon.py muon_test.py mypy_plugin.py
nadam.py nadam_test.py nag.py name_scope.py name_scope_test.py named_sharding.py named_tensor_pb2.py naming.py
naming_test.py nasnet.py nbinom.py nccl_ops.py ndarray_conversion.py ndarray_misc.py ndarray_shape_manipulation.py
ndbm.py ndimage.py nditer.py neptune_model_export_archive.py nest.py nest_util.py nested_structure_coder.py netrc.py
network_serialization.py nim.py nn.py nn_fused_batch_norm_grad.py nn_grad.py nn_impl.py nn_impl_distribute.py nn_ops.py
nn_test.py nntplib.py no_fixer_cls.py node.py node_def_pb2.py node_test.py none.py none_tensor.py nonmultipart.py
norm.py normal.py normalization.py normalization_test.py np_array_ops.py np_arrays.py np_config.py np_dtypes.py
np_math_ops.py np_random.py np_utils.py npy_pkg_config.py npyio.py npz_utils.py npz_utils_test.py ntpath.py
nturl2path.py numbers.py numeric.py numerical_utils.py numerical_utils_test.py numerics.py numerictypes.py numpy.py
numpy_compat.py numpy_dataset.py numpy_distribution.py numpy_test.py numpy_util.py nv.py nvgpu.py nvvm.py obj.py
obj_backend.py object_identity.py object_registration.py object_registration_test.py ode.py oem.py offline_analyzer.py
ompi_cluster.py one_device_strategy.py onnx.py onnx_test.py op_callbacks.py op_callbacks_common.py op_def_library.py
op_def_library_pybind.py op_def_pb2.py op_def_registry.py op_hint.py op_performance_data_pb2.py op_selector.py
op_shardings.py opcode.py openvino.py openvino_test.py operation.py operation_test.py operation_utils.py
operation_utils_test.py operator.py ops.py ops_test.py optimization_parameters_pb2.py optimize_for_inference.py
optimize_for_inference_lib.py optimized_function_graph_pb2.py optimizer.py optimizer_distribute_test.py
optimizer_sparse_test.py optimizer_test.py optimizer_v1.py optimizer_v2.py optimizers.py option_builder.py
optional_grad.py optional_ops.py options.py optparse.py optree_impl.py orbax_checkpoint.py orbax_checkpoint_test.py
orbax_util.py origin_info.py os.py other.py outwin.py override_binary_operator.py overrides.py
packed_distributed_variable.py pad_to_cardinality.py padded_batch_op.py paged_attention.py paged_attention_kernel.py
paint.py pallas.py pallas_call.py pallas_call_registration.py palmos.py panel.py parallel.py parallel_device.py
parameter_server_strategy.py parameter_server_strategy_v2.py parameterized.py params.py parenmatch.py pareto.py
parrot_example.py parse.py parser.py parsing_config.py parsing_grad.py parsing_ops.py partial_batch_padding_handler.py
partial_eval.py partition_spec.py partitioned_variables.py passmanager.py patcomp.py path.py path_helpers.py
pathbrowser.py pathccompiler.py pathf95.py pathlib.py pdb.py peace.py penrose.py percolator.py permute.py
permute_test.py pfor.py pg.py pgen.py pgo_nsys_converter.py philox.py philox2x32.py philox4x32.py pickle.py
pickle_util.py pickletools.py pipeline.py pipeline_test.py pipes.py pjit.py pkgutil.py planet_and_moon.py platform.py
plistlib.py plot_bounding_box_gallery.py plot_image_gallery.py plot_segmentation_mask_gallery.py plugin_asset.py
plugin_support.py pmap.py poisson.py policy.py polymorphic_function.py polynomial.py polyutils.py pool.py pooling.py
popen_fork.py popen_forkserver.py popen_spawn_posix.py popen_spawn_win32.py poplib.py posixpath.py pprint.py
preempted_hook.py preemption_watcher.py prefetch_op.py prefetching_ops.py prelu.py prelu_test.py pretty_printer.py
primitives.py print_coercion_tables.py print_selective_registration_header.py printoptions.py prng.py prng_utils.py
proactor_events.py probabilistic_metrics.py probabilistic_metrics_test.py process.py profile.py profile_analyzer_cli.py
profile_pb2.py profiler.py profiler_client.py profiler_options_pb2.py profiler_v2.py profiling.py profiling_info_pb2.py
progbar.py progbar_logger.py progbar_test.py projector_config_pb2.py property_hint_util.py proto_exports.py proto_ops.py
protocols.py proximal_adagrad.py proximal_gradient_descent.py ps_values.py pstats.py ptcp154.py pty.py public_api.py
public_test_util.py pulldom.py punycode.py pxla.py py2_test_grammar.py py3_test_grammar.py py_builtins.py
py_checkpoint_reader.py py_compile.py py_dataset_adapter.py py_dataset_adapter_test.py py_function_lib.py pyclbr.py
pydoc.py pygram.py pyinstaller-smoke.py pyparse.py pyshell.py python-config.py python_io.py python_memory_checker.py
python_state.py python_utils.py python_utils_test.py pytree.py pytree_idempotency.py pytree_serialization.py
pytree_serialization_utils.py pywrap_dlopen_global_flags.py pywrap_genai_ops.py pywrap_mlir.py pywrap_sanitizers.py
pywrap_tensorflow.py pywrap_tf_session.py pywrap_tfe.py qdwh.py qual_names.py quantization_config.py
quantization_config_pb2.py quantization_config_test.py quantization_options_pb2.py quantization_utils.py
quantize_model.py quantize_training.py quantizers.py quantizers_test.py query.py queue.py queue_runner.py
queue_runner_impl.py queue_runner_pb2.py queues.py quopri.py quopri_codec.py quoprimime.py race_detection_state.py
ragged_array_ops.py ragged_autograph.py ragged_batch_gather_ops.py ragged_batch_gather_with_default_op.py
ragged_batch_op.py ragged_bincount_ops.py ragged_check_ops.py ragged_concat_ops.py ragged_config.py
ragged_conversion_ops.py ragged_dispatch.py ragged_dot_mgpu.py ragged_embedding_ops.py ragged_factory_ops.py
ragged_functional_ops.py ragged_gather_ops.py ragged_getitem.py ragged_image_ops.py ragged_map_ops.py ragged_math_ops.py
ragged_operators.py ragged_ops.py ragged_squeeze_op.py ragged_string_ops.py ragged_tensor.py ragged_tensor_shape.py
ragged_tensor_test_ops.py ragged_tensor_value.py ragged_util.py ragged_where_op.py rand_augment.py rand_augment_test.py
random.py random_access.py random_brightness.py random_brightness_test.py random_color_degeneration.py
random_color_degeneration_test.py random_color_jitter.py random_color_jitter_test.py random_contrast.py
random_contrast_test.py random_crop.py random_crop_ops.py random_crop_test.py random_elastic_transform.py
random_elastic_transform_test.py random_erasing.py random_erasing_test.py random_flip.py random_flip_test.py
random_gaussian_blur.py random_gaussian_blur_test.py random_grad.py random_grayscale.py random_grayscale_test.py
random_hue.py random_hue_test.py random_initializers.py random_initializers_test.py random_invert.py
random_invert_test.py random_op.py random_ops.py random_ops_util.py random_perspective.py random_perspective_test.py
random_posterization.py random_posterization_test.py random_rotation.py random_rotation_test.py random_saturation.py
random_saturation_test.py random_seed.py random_sharpness.py random_sharpness_test.py random_shear.py
random_shear_test.py random_test.py random_translation.py random_translation_test.py random_zoom.py random_zoom_test.py
range_op.py raw_unicode_escape.py rbg.py reaching_definitions.py reaching_fndefs.py reader_base_pb2.py readers.py
readline_ui.py rebatch_op.py recfunctions.py reconstruction_ops.py record.py records.py recurrent.py redirector.py
reduce_lr_on_plateau.py reduce_lr_on_plateau_test.py reduce_scatter_mgpu.py reduce_util.py reduction.py
reduction_metrics.py reduction_metrics_test.py reductions.py ref.py ref_variable.py refactor.py register.py
registration.py registry.py regression_metrics.py regression_metrics_test.py regularizers.py regularizers_test.py
relu.py relu_test.py remat.py remat_test.py remote.py remote_monitor.py remote_monitor_test.py
remote_tensor_handle_pb2.py remote_utils.py remote_value.py renames_v2.py reorders_v2.py repeat_op.py repeat_vector.py
repeat_vector_test.py replace.py representative_dataset.py reprlib.py request.py resampling.py rescaling.py
rescaling_test.py reshape.py reshape_test.py resizing.py resizing_test.py resnet.py resnet_v2.py resource.py
resource_handle_pb2.py resource_loader.py resource_sharer.py resource_tracker.py resource_variable_ops.py
resource_variables_toggle.py resources.py response.py restore.py restore_captures.py result.py return_statements.py
reuters.py reversible_embedding.py reversible_embedding_test.py revived_types.py rewriter_config_pb2.py rlcompleter.py
rms_norm.py rms_normalization.py rms_normalization_test.py rmsprop.py rmsprop_test.py rng_utils.py rng_utils_test.py
rnn.py rnn_cell.py rnn_cell_impl.py rnn_cell_wrapper_impl.py rnn_cell_wrapper_v2.py rnn_grad.py rnn_test.py
robotparser.py rocm_cholesky_solver_potrf.py rocm_eigh_hipsolver_syev.py rocm_lu_pivots_to_permutation.py
rocm_lu_rocsolver_getrf.py rocm_qr_hipsolver_geqrf.py rocm_svd_hipsolver_gesvd.py rocm_threefry2x32.py
rocm_tridiagonal_hipsolver_sytrd.py roofline.py rooflines.py rosette.py rot_13.py round_dance.py row_partition.py rpc.py
rpc_ops.py rpc_options_pb2.py rules.py run.py runner.py runners.py runpy.py runscript.py sagemaker_cluster_resolver.py
sample_from_datasets_op.py save.py save_context.py save_impl.py save_model.py save_op.py save_options.py save_restore.py
save_util.py save_util_v1.py saveable_compat.py saveable_object.py saveable_object_util.py saved_metadata_pb2.py
saved_model.py saved_model_aot_compile.py saved_model_cli.py saved_model_experimental.py saved_model_export_archive.py
saved_model_exported_concrete.py saved_model_pb2.py saved_model_test.py saved_model_utils.py saved_object_graph_pb2.py
saved_tensor_slice_pb2.py saver.py saver_pb2.py saver_test_utils.py saving.py saving_api.py saving_api_test.py
saving_lib.py saving_lib_test.py saving_options.py saving_utils.py saxutils.py sc_core.py sc_lowering.py
sc_primitives.py scalar_types.py scalars.py scale.py scaled_dot.py scaled_matmul_stablehlo.py scan_op.py scan_ops.py
scanner.py scatter.py scf.py sched.py schedule_free_adamw.py schedule_free_adamw_test.py scheduling_groups.py
schema_py_generated.py schema_util.py scimath.py script_ops.py scrolledlist.py scrolledtext.py sdca_ops.py sdist.py
sdy.py search.py searchbase.py searchengine.py secrets.py seed_generator.py seed_generator_test.py segment_id_ops.py
selective_registration_header_lib.py selector_events.py selectors.py self_check.py separable_conv1d.py
separable_conv2d.py separable_conv_test.py sequence.py sequence_feature_column.py sequence_utils.py
sequence_utils_test.py sequential.py sequential_test.py serialization.py serialization_generated.py serialization_lib.py
serialization_lib_test.py serialization_pb2.py serialization_test_pb2.py serialize_executable.py
serialized_attributes.py server.py server_lib.py service_config_pb2.py session.py session_debug_testlib.py
session_manager.py session_ops.py session_run_hook.py setops.py sets.py sets_impl.py setup.py sgd.py sgd_test.py
shape.py shape_base.py shape_ops.py shape_poly.py shape_poly_decision.py shape_util.py shard_alike.py shard_map.py
shard_op.py sharded_variable.py sharding.py sharding_impls.py sharding_policies.py sharding_util.py
shardy_sharding_ops_with_different_meshes.py shared_memory.py shared_variable_creator.py sharedctypes.py shelve.py
shift_jis.py shift_jis_2004.py shift_jisx0213.py shlex.py shuffle_op.py shuffle_ops.py shutil.py sidebar.py signal.py
signal_helper.py signals.py signature_constants.py signature_def_utils.py signature_def_utils_impl.py
signature_serialization.py simple.py simple_rnn.py simple_rnn_test.py simple_save.py simple_server.py simpledialog.py
single_loss_example.py site.py skip_op.py sklearn_test.py sklearn_wrapper.py slices.py slicing.py slot_creator.py
slurm_cluster.py slurm_cluster_resolver.py smart_cond.py smtpd.py smtplib.py snapshot.py snapshot_op.py snapshot_pb2.py
sndhdr.py socket.py socketserver.py softmax.py softmax_test.py solarization.py solarization_test.py solves.py
sort_ops.py sorting.py sorting_animate.py source_info_util.py source_remote.py source_utils.py sourcemap.py spam.py
sparse.py sparse_batch_op.py sparse_core_layout_pb2.py sparse_csr_matrix_grad.py sparse_csr_matrix_ops.py sparse_grad.py
sparse_ops.py sparse_tensor.py sparse_xent_op_test_base.py spatial_dropout.py spatial_dropout_test.py spawn.py
special.py special_functions.py special_math.py special_math_ops.py spectral_normalization.py
spectral_normalization_test.py spectral_ops.py splash_attention_kernel.py splash_attention_mask.py
splash_attention_mask_info.py squeezer.py sre_compile.py sre_constants.py sre_parse.py ssl.py sslproto.py stablehlo.py
stablehlo_dynamic_approx_top_k.py stablehlo_dynamic_rng_bit_generator.py stablehlo_dynamic_top_k.py stack.py
stacked_rnn_cells.py stacked_rnn_cells_test.py stackviewer.py stages.py staggered.py standard_ops.py stat.py
state_grad.py state_ops.py stateful_random_ops.py stateful_rng.py stateless_random_ops.py stateless_scope.py
stateless_scope_test.py statistics.py status_pb2.py statusbar.py stax.py step_fn.py step_stats_pb2.py
stft_spectrogram.py stft_spectrogram_test.py strategy_combinations.py strategy_test_lib.py streams.py strict_mode.py
stride_tricks.py string.py string_lookup.py string_lookup_test.py string_ops.py stringprep.py strings.py strip_unused.py
strip_unused_lib.py struct.py struct_pb2.py structure.py structured_array_ops.py structured_function.py
structured_ops.py structured_tensor.py structured_tensor_dynamic.py student_t.py subprocess.py subscribe.py subtract.py
suite.py summary.py summary_io.py summary_iterator.py summary_op_util.py summary_ops_v2.py summary_pb2.py
summary_utils.py summary_utils_test.py sun.py sunau.py supervisor.py support.py svd.py swap_ema_weights.py
swap_ema_weights_test.py symbolic.py symbolic_arguments.py symbolic_arguments_test.py symbolic_scope.py
symbolic_scope_test.py symtable.py sync_replicas_optimizer.py synchronize.py sysconfig.py system_info.py t.py
tabnanny.py tag_constants.py take_op.py take_while_op.py take_while_ops.py tape.py tarfile.py taskgroups.py tasks.py
tb_summary.py tcgen05.py telnetlib.py tempfile.py template.py templates.py tensor.py tensor_array_grad.py
tensor_array_ops.py tensor_attributes.py tensor_bundle_pb2.py tensor_callable.py tensor_contractions.py
tensor_conversion.py tensor_conversion_registry.py tensor_description_pb2.py tensor_format.py tensor_getitem_override.py
tensor_list.py tensor_math_operator_overrides.py tensor_pb2.py tensor_shape.py tensor_shape_pb2.py tensor_slice_pb2.py
tensor_spec.py tensor_tracer.py tensor_tracer_flags.py tensor_tracer_pb2.py tensor_tracer_report.py tensor_util.py
tensorboard.py tensorboard_test.py tensorflow_server_pb2.py tensors.py tensorstore_impl.py terminate_on_nan.py
terminate_on_nan_test.py test.py test__all__.py test__datasource.py test__exceptions.py test__iotools.py
test__version.py test_abc.py test_abstract_interface.py test_all_fixers.py test_api.py test_archive_util.py
test_argparse.py test_array_api_info.py test_array_coercion.py test_array_from_pyobj.py test_array_interface.py
test_array_utils.py test_arraymethod.py test_arrayobject.py test_arraypad.py test_arrayprint.py test_arraysetops.py
test_arrayterator.py test_assumed_shape.py test_autocomplete.py test_autocomplete_w.py test_autoexpand.py
test_backend_name.py test_backend_util.py test_base.py test_bdist.py test_bdist_dumb.py test_bdist_rpm.py
test_block_docstring.py test_browser.py test_build.py test_build_clib.py test_build_ext.py test_build_py.py
test_build_scripts.py test_callback.py test_calltip.py test_calltip_w.py test_capi_maps.py test_case.py
test_casting_floatingpoint_errors.py test_casting_unittests.py test_ccompiler_opt.py test_ccompiler_opt_conf.py
test_character.py test_chebyshev.py test_check.py test_classes.py test_clean.py test_cmd.py test_codecontext.py
test_colorizer.py test_combinations.py test_common.py test_config.py test_config_cmd.py test_config_key.py
test_configdialog.py test_configtool.py test_conversion_utils.py test_core.py test_cpu_dispatcher.py
test_cpu_features.py test_crackfortran.py test_ctypeslib.py test_custom_dtypes.py test_cygwinccompiler.py test_cython.py
test_data.py test_datetime.py test_debugger.py test_debugger_r.py test_debugobj.py test_debugobj_r.py
test_defchararray.py test_defmatrix.py test_delegator.py test_dep_util.py test_deprecations.py test_dir_util.py
test_direct.py test_dist.py test_dlpack.py test_docs.py test_dtype.py test_editmenu.py test_editor.py test_einsum.py
test_errstate.py test_exec_command.py test_extending.py test_extension.py test_extint128.py test_extras.py
test_f2cmap.py test_f2py2e.py test_fcompiler.py test_fcompiler_gnu.py test_fcompiler_intel.py test_fcompiler_nagfor.py
test_file_util.py test_filelist.py test_finfo.py test_fixers.py test_format.py test_from_template.py
test_function_base.py test_generator_mt19937.py test_generator_mt19937_regressions.py test_getlimits.py test_grep.py
test_half.py test_harnesses.py test_hashtable.py test_help.py test_help_about.py test_helper.py test_hermite.py
test_hermite_e.py test_histograms.py test_history.py test_hyperparser.py test_index_tricks.py test_indexerrors.py
test_indexing.py test_install.py test_install_data.py test_install_headers.py test_install_lib.py
test_install_scripts.py test_interaction.py test_io.py test_iomenu.py test_isfile.py test_isoc.py test_item_selection.py
test_kind.py test_laguerre.py test_lazyloading.py test_legendre.py test_limited_api.py test_linalg.py test_loader.py
test_loadtxt.py test_log.py test_log_pb2.py test_longdouble.py test_macosx.py test_main.py test_mainmenu.py
test_masked_matrix.py test_matlib.py test_matrix_linalg.py test_mem_overlap.py test_mem_policy.py test_memmap.py
test_mingw32ccompiler.py test_misc_util.py test_mixed.py test_mixins.py test_mode.py test_module1.py test_module2.py
test_modules.py test_mrecords.py test_msvc9compiler.py test_msvccompiler.py test_multiarray.py test_multicall.py
test_multiprocess.py test_multiprocessing.py test_multithreading.py test_nanfunctions.py test_nditer.py
test_nep50_promotions.py test_npy_pkg_config.py test_numeric.py test_numerictypes.py test_numpy_config.py
test_numpy_version.py test_old_ma.py test_ops.py test_outwin.py test_overrides.py test_packbits.py test_parameter.py
test_parenmatch.py test_parser.py test_pathbrowser.py test_percolator.py test_pocketfft.py test_polynomial.py
test_polyutils.py test_print.py test_printing.py test_protocols.py test_public_api.py test_pyf_src.py
test_pyinstaller.py test_pyparse.py test_pyshell.py test_pytree.py test_query.py test_quoted_character.py test_random.py
test_randomstate.py test_randomstate_regression.py test_recfunctions.py test_records.py test_redirector.py
test_refactor.py test_register.py test_regression.py test_reloading.py test_replace.py test_return_character.py
test_return_complex.py test_return_integer.py test_return_logical.py test_return_real.py test_routines.py test_rpc.py
test_run.py test_runscript.py test_runtime.py test_scalar_ctors.py test_scalar_methods.py test_scalarbuffer.py
test_scalarinherit.py test_scalarmath.py test_scalarprint.py test_scripts.py test_scrolledlist.py test_sdist.py
test_search.py test_searchbase.py test_searchengine.py test_seed_sequence.py test_semicolon_split.py test_shape_base.py
test_shell_utils.py test_sidebar.py test_simd.py test_simd_module.py test_size.py test_smoke.py test_spawn.py
test_squeezer.py test_stackviewer.py test_statusbar.py test_stride_tricks.py test_string.py test_stringdtype.py
test_strings.py test_subclassing.py test_symbol.py test_symbolic.py test_sysconfig.py test_system_info.py test_text.py
test_text_file.py test_textview.py test_tooltip.py test_tree.py test_twodim_base.py test_type_check.py test_typing.py
test_ufunc.py test_ufunclike.py test_umath.py test_umath_accuracy.py test_umath_complex.py test_undo.py test_unicode.py
test_unixccompiler.py test_upload.py test_util.py test_util_ops.py test_utils.py test_utils_test.py
test_value_attrspec.py test_version.py test_versionpredicate.py test_warning.py test_warning_util.py test_warnings.py
test_window.py test_zoomheight.py test_zzdummy.py testing.py testing_utils.py testutils.py text.py text_dataset_utils.py
text_dataset_utils_test.py text_file.py text_vectorization.py text_vectorization_test.py textpad.py textview.py
textwrap.py tf2.py tf2onnx_lib.py tf2xla_pb2.py tf_contextlib.py tf_dataset_adapter.py tf_dataset_adapter_test.py
tf_decorator.py tf_decorator_export.py tf_doctest_lib.py tf_export.py tf_inspect.py tf_logging.py tf_method_target.py
tf_optimizer.py tf_record.py tf_record_test_base.py tf_rpc_service_pb2.py tf_rpc_service_pb2_grpc.py tf_should_use.py
tf_stack.py tf_trt_integration_test_base.py tf_upgrade_v2.py tf_upgrade_v2_main.py tf_upgrade_v2_safety.py tf_utils.py
tfconfig_cluster_resolver.py tflite_convert.py tflite_keras_util.py tfprof_log_pb2.py tfprof_logger.py
tfprof_options_pb2.py tfprof_output_pb2.py tfrt_utils.py tfsm_layer.py tfsm_layer_test.py this.py thread.py
thread_map.py thread_safe_test.py threading.py threads.py threefry.py threefry2x32.py threefry4x32.py
time_distributed.py time_distributed_test.py timeit.py timeline.py timeouts.py timeseries_dataset_utils.py
timeseries_dataset_utils_test.py tis_620.py tix.py tkinter_testing_utils.py toco_conversion_log_pb2.py toco_flags_pb2.py
token.py tokenize.py tool.py tooltip.py topics.py topologies.py topology.py topology_pb2.py torch.py torch_adadelta.py
torch_adagrad.py torch_adam.py torch_adamax.py torch_adamw.py torch_data_loader_adapter.py
torch_data_loader_adapter_test.py torch_lion.py torch_nadam.py torch_optimizer.py torch_parallel_optimizer.py
torch_rmsprop.py torch_sgd.py torch_test.py torch_utils.py torch_utils_test.py torchtree_impl.py tpu.py
tpu_ApproxTopK.py tpu_Eigh.py tpu_Lu.py tpu_Qr.py tpu_Sharding.py tpu_cluster_resolver.py tpu_custom_call.py
tpu_embedding_base.py tpu_embedding_configuration_pb2.py tpu_embedding_for_serving.py tpu_embedding_v1.py
tpu_embedding_v2.py tpu_embedding_v2_utils.py tpu_embedding_v3.py tpu_embedding_v3_checkpoint_adapter.py
tpu_embedding_v3_utils.py tpu_feed.py tpu_function.py tpu_hardware_feature.py tpu_info.py tpu_name_util.py tpu_ops.py
tpu_optimizer.py tpu_replicated_variable.py tpu_replication.py tpu_sc.py tpu_sharding.py
tpu_stablehlo_dynamic_reduce_window.py tpu_strategy.py tpu_strategy_util.py tpu_system_metadata.py tpu_util.py
tpu_values.py trace.py trace_events_pb2.py trace_saveable_util.py trace_type_builder.py traceable_stack.py traceback.py
traceback_util.py traceback_utils.py tracemalloc.py tracing_compilation.py tracing_utils.py trackable.py
trackable_object_graph_pb2.py trackable_utils.py trackable_view.py tracking.py tracking_test.py trainer.py
trainer_test.py training.py training_arrays_v1.py training_distributed_v1.py training_eager_v1.py
training_generator_v1.py training_loop.py training_util.py training_utils.py training_utils_v1.py training_v1.py
transfer.py transform.py transformer.py transpiler.py transport_options_pb2.py transports.py
transposed_ragged_dot_mgpu.py traverse.py tree.py tree_api.py tree_test.py tree_util.py triton.py triton_add_one.py
trsock.py trt_convert.py truncnorm.py ttk.py tty.py tuned_block_sizes.py turtle.py two_canvases.py type_annotations.py
type_dispatch.py type_inference.py type_registry.py type_spec.py type_spec_registry.py type_utils.py types.py
types_pb2.py typing.py ufunc_api.py ufunc_config.py ufunclike.py ufuncs.py ui_factory.py umath.py unbatch_op.py
unconnected_gradients.py undefined.py undo.py unexported_constants.py unicode_escape.py uniform.py
uniform_quant_ops_attr_pb2.py unique.py unique_op.py unit_normalization.py unit_normalization_test.py unix_events.py
unixccompiler.py unsupported_features_checker.py up_sampling1d.py up_sampling1d_test.py up_sampling2d.py
up_sampling2d_test.py up_sampling3d.py up_sampling3d_test.py upload.py use_rules.py user_array.py user_ops.py utf_16.py
utf_16_be.py utf_16_le.py utf_32.py utf_32_be.py utf_32_le.py utf_7.py utf_8.py utf_8_sig.py util.py util_ops.py
utilities.py utils.py utils_impl.py utils_test.py uu.py uu_codec.py uuid.py v2.py v2_compat.py validate.py validation.py
validation_test.py values.py values_util.py values_v2.py variable_mapping.py variable_mapping_test.py variable_pb2.py
variable_scope.py variable_scope_shim.py variable_utils.py variable_v1.py variables.py variables_test.py vast.py
vector.py vector_clock.py vectorize.py verifier_config_pb2.py version.py version_utils.py versionpredicate.py
versions.py versions_pb2.py vgg16.py vgg19.py vis_utils.py visualize.py vonmises.py vq.py warm_starting_util.py
warnings.py warnings_and_errors.py watchdog.py wave.py weak_tensor.py weak_tensor_ops.py weak_tensor_test_util.py
weakref.py web_debugger.py webbrowser.py weights_broadcast_ops.py wgmma.py while_loop.py while_v2.py
while_v2_indexed_slices_rewriter.py window.py window_functions.py window_op.py window_ops.py windowed_reductions.py
windows_events.py windows_utils.py wintypes.py worker_training_state.py wrap_converter.py wrap_function.py wrapcauchy.py
wrapper.py wrapper_test.py writer.py writer_cache.py writers.py xception.py xdrlib.py xent_op_test_base.py xla.py
xla_bridge.py xla_client.py xla_data_pb2.py xla_metadata.py xla_metadata_lib.py xla_ops.py xla_ops_grad.py
xla_sharding.py xla_transform.py xml_reporter.py xmlbuilder.py xmlreader.py xplane_pb2.py yinyang.py zero_padding1d.py
zero_padding1d_test.py zero_padding2d.py zero_padding2d_test.py zero_padding3d.py zero_padding3d_test.py zip_op.py
zipapp.py zipfile.py zipimport.py zlib_codec.py zoomheight.py zzdummy.py
""".split()  # noqa: SIM905 - one word per name keeps the table short
)
