#!/usr/bin/env bash
# Checks that a librdmx.so exports every engine name of DESIGN.md's engine table.
#   scripts/check-exports.sh path/to/librdmx.so
set -euo pipefail
lib=${1:?usage: $0 librdmx.so}
names=(
	rdmx_version rdmx_strerror rdmx_err_name rdmx_log_set_threshold rdmx_log_get_threshold rdmx_log_set_function
	rdmx_dev_list rdmx_dev_open rdmx_dev_open_by_addr rdmx_dev_close rdmx_dev_query_caps
	rdmx_dev_get_gid rdmx_dev_provider
	rdmx_mr_reg rdmx_mr_dereg rdmx_mr_get_ptr rdmx_mr_get_size rdmx_mr_get_descriptor
	rdmx_mr_get_descriptor_size rdmx_mr_remote_from_descriptor rdmx_mr_remote_delete
	rdmx_mr_remote_get_size rdmx_mr_grant rdmx_mr_grant_revoke rdmx_mr_grant_get_descriptor
	rdmx_mr_grant_get_state
	rdmx_pe_create rdmx_pe_destroy rdmx_pe_progress rdmx_pe_get_fd rdmx_pe_request_notification
	rdmx_pe_clear_notification rdmx_pe_wait rdmx_pe_next_timeout_ms rdmx_pe_now_ns
	rdmx_pe_timer_init rdmx_pe_timer_start rdmx_pe_timer_stop rdmx_pe_timer_is_active
	rdmx_ctx_create rdmx_ctx_destroy rdmx_ctx_start rdmx_ctx_stop rdmx_ctx_get_state
	rdmx_ctx_set_send_queue_size rdmx_ctx_get_send_queue_size rdmx_ctx_set_recv_queue_size
	rdmx_ctx_get_recv_queue_size rdmx_ctx_set_max_send_buf_list_len rdmx_ctx_get_max_send_buf_list_len
	rdmx_ctx_set_max_recv_buf_list_len rdmx_ctx_get_max_recv_buf_list_len rdmx_ctx_set_permissions
	rdmx_ctx_get_permissions rdmx_ctx_set_mtu rdmx_ctx_get_mtu rdmx_ctx_set_gid_index
	rdmx_ctx_get_gid_index rdmx_ctx_set_sl rdmx_ctx_get_sl rdmx_ctx_set_grh rdmx_ctx_get_grh
	rdmx_ctx_set_conn_request_timeout rdmx_ctx_get_conn_request_timeout rdmx_ctx_set_rnr_retry_count
	rdmx_ctx_get_rnr_retry_count rdmx_ctx_set_max_connections rdmx_ctx_get_max_connections
	rdmx_ctx_set_transport_type rdmx_ctx_get_transport_type rdmx_ctx_set_user_data
	rdmx_ctx_get_user_data rdmx_ctx_set_task_conf rdmx_ctx_set_conn_callbacks
	rdmx_ctx_set_transport_timeout rdmx_ctx_get_transport_timeout rdmx_ctx_set_retry_count
	rdmx_ctx_get_retry_count rdmx_ctx_set_max_inline rdmx_ctx_get_max_inline
	rdmx_ctx_get_stats rdmx_task_type_name
	rdmx_ctx_export rdmx_ctx_connect rdmx_ctx_listen rdmx_ctx_stop_listen rdmx_ctx_connect_to_addr
	rdmx_conn_accept rdmx_conn_reject rdmx_conn_disconnect rdmx_conn_get_id rdmx_conn_get_addr
	rdmx_conn_get_private_data rdmx_conn_set_user_data rdmx_conn_get_user_data
	rdmx_addr_create rdmx_addr_destroy rdmx_addr_get_params
	rdmx_task_receive_alloc rdmx_task_send_alloc rdmx_task_send_imm_alloc rdmx_task_read_alloc
	rdmx_task_write_alloc rdmx_task_write_imm_alloc rdmx_task_atomic_cas_alloc
	rdmx_task_atomic_fadd_alloc rdmx_task_atomic_write_alloc rdmx_task_flush_alloc
	rdmx_task_submit rdmx_task_free rdmx_task_get_status rdmx_task_get_user_data rdmx_task_get_type
	rdmx_task_set_conn rdmx_task_set_local rdmx_task_set_remote rdmx_task_set_imm
	rdmx_task_set_cmp_swap rdmx_task_set_operand
	rdmx_task_receive_get_opcode rdmx_task_receive_get_len rdmx_task_receive_get_imm
	rdmx_task_receive_get_conn rdmx_task_read_get_len
	rdmx_sync_event_create rdmx_sync_event_destroy rdmx_sync_event_get_descriptor
	rdmx_sync_event_wait_ge rdmx_task_sync_event_get_alloc rdmx_task_sync_event_notify_set_alloc
	rdmx_task_sync_event_notify_add_alloc
	rdmx_conn_set_data_keys rdmx_conn_is_sealed
	rdmx_tls_config_set_data_plaintext rdmx_tls_config_get_data_plaintext
	rdmx_tls_check_peer_pattern
	rdmx_registry_client_open rdmx_registry_client_connect_timeout rdmx_registry_keeper_start
	rdmx_registry_balancer_opts_init rdmx_registry_balancer_create rdmx_registry_balancer_destroy
	rdmx_registry_balancer_refresh rdmx_registry_balancer_pick rdmx_registry_balancer_done
	rdmx_registry_balancer_may_retry rdmx_registry_balancer_count
	rdmx_rpc_md_init rdmx_rpc_md_fini rdmx_rpc_md_key_valid rdmx_rpc_md_add rdmx_rpc_md_get
	rdmx_rpc_md_count rdmx_rpc_md_append
	rdmx_rpc_stream_open rdmx_rpc_server_register_stream rdmx_rpc_stream_set_callbacks
	rdmx_rpc_stream_write rdmx_rpc_stream_half_close rdmx_rpc_stream_send_headers
	rdmx_rpc_stream_finish rdmx_rpc_stream_cancel rdmx_rpc_stream_pause_read
	rdmx_rpc_stream_resume_read rdmx_rpc_stream_set_window rdmx_rpc_stream_get_headers
	rdmx_rpc_stream_get_id rdmx_rpc_stream_get_method rdmx_rpc_stream_get_deadline
	rdmx_rpc_stream_get_queued rdmx_rpc_stream_get_ep rdmx_rpc_ep_get_streams
	rdmx_rpc_stream_set_window_bytes rdmx_rpc_stream_get_queued_bytes
	rdmx_rpc_ep_set_max_metadata rdmx_rpc_call_async_md rdmx_rpc_call_md rdmx_rpc_call_get_headers
	rdmx_rpc_call_get_request_id rdmx_rpc_call_add_header rdmx_rpc_call_add_trailer
	rdmx_rpc_server_call_take_request rdmx_rpc_result_take
	rdmx_rpc_call_set_details rdmx_rpc_ep_add_interceptor rdmx_rpc_server_add_interceptor
	rdmx_registry_balancer_call rdmx_registry_balancer_create_secure
	rdmx_registry_balancer_get_retries
	rdmx_ctx_listen_join rdmx_rpc_workers_listen rdmx_rpc_workers_destroy
	rdmx_codec_stream_cancel rdmx_codec_stream_get_headers rdmx_codec_stream_get_trailers
	rdmx_codec_stream_get_stream
	rdmx_rpc_workers_get_count rdmx_rpc_workers_get_assigned rdmx_rpc_workers_get_clients
)
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }')
missing=0
for n in "${names[@]}"; do
	if ! grep -qx "$n" <<<"$exported"; then
		echo "check-exports: $lib does not export $n"
		missing=$((missing + 1))
	fi
done
echo "check-exports: ${#names[@]} engine names checked, $missing missing"
# the libev servers' library beside it (when installed there)
ev_lib=$(dirname "$lib")/librdmx_secure_ev.so
ev_names=(
	rdmx_rpc_secure_listen rdmx_rpc_secure_server_destroy
	rdmx_rpc_secure_workers_listen rdmx_rpc_secure_workers_destroy
	rdmx_rpc_secure_workers_get_port rdmx_rpc_secure_workers_get_count
	rdmx_rpc_secure_workers_get_assigned rdmx_rpc_secure_workers_get_clients
	rdmx_rpc_secure_workers_index_of
)
if [ -e "$ev_lib" ]; then
	ev_exported=$(nm -D --defined-only "$ev_lib" | awk '$2 == "T" { print $3 }')
	ev_missing=0
	for n in "${ev_names[@]}"; do
		if ! grep -qx "$n" <<<"$ev_exported"; then
			echo "check-exports: $ev_lib does not export $n"
			ev_missing=$((ev_missing + 1))
		fi
	done
	echo "check-exports: ${#ev_names[@]} libev server names checked, $ev_missing missing"
	missing=$((missing + ev_missing))
fi
[ "$missing" -eq 0 ]
