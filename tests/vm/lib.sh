# shellcheck shell=bash
# tests/vm/lib.sh — run programs on real rdma-core verbs (Soft-RoCE, "rxe")
# inside a QEMU guest booted with software emulation only.
#
# Why: the host kernel has no InfiniBand support and cannot load modules, so
# it can never open a verbs device. A guest kernel (Debian's linux-image-amd64)
# can: it loads rdma_rxe, puts two Soft-RoCE devices (rxe0, rxe1) on the two
# ends of a veth pair, and real libibverbs/librdmacm programs run on them.
# The facts this file relies on are in /work/shared/VM-RXE.md.
#
# Source this file from bash and call, in order:
#   vm_install_deps                                  -> 0, or 77 = skipped
#   vm_build_initramfs OUT.cpio.gz GUEST_SCRIPT [EXTRA_PATHS...]
#   vm_boot OUT.cpio.gz TIMEOUT_S LOGFILE            -> the guest's status
#
# GUEST_SCRIPT is a POSIX sh script (busybox ash runs it, not bash). It runs
# after the network and the rxe0/rxe1 devices are up, with the working
# directory "/" and these variables set:
#   RDMX_VM_IP  RDMX_VM_RDMA   full paths of iproute2's ip and rdma (busybox's
#                              applets of the same names would shadow them)
#   RDMX_VM_ADDR0=198.18.0.1 (veth0, rxe0)   RDMX_VM_ADDR1=198.18.0.2 (veth1, rxe1)
# and it may `. /rdmx/guest-lib.sh` for helpers (vm_wait_listen, vm_run).
# Its exit status comes back out of the guest through the serial console as
# the marker line `RDMX_VM_EXIT=<status>`, which vm_boot parses.
#
# Tunables (environment):
#   VM_WORK          work directory (default: tests/vm/work, gitignored)
#   VM_KERNEL_VER    guest kernel version (default: newest /boot/vmlinuz-* that
#                    has rdma_rxe.ko under /lib/modules)
#   VM_MEM_MB        guest memory (default 2048)
#   VM_KEEP_DEBUG=1  do not strip debug info from the copied ELF files

# The directory of this file, and the repository root two levels up.
VM_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck disable=SC2034  # used by the scripts that source this file
VM_REPO="$(cd "$VM_DIR/../.." && pwd)"
VM_WORK="${VM_WORK:-$VM_DIR/work}"

# Status code meaning "the VM cannot run on this machine": the same value as
# automake's "skipped test", so a caller can report it as a skip.
VM_SKIP=77

# Packages the guest needs on the host (the guest's files are copied from the
# host's installed packages).
VM_PACKAGES=(qemu-system-x86 linux-image-amd64 busybox-static rdma-core
  ibverbs-utils rdmacm-utils perftest iproute2 kmod cpio gzip)

# Kernel modules, in the order VM-RXE.md checked. Each one's own dependencies
# (from modules.dep) are loaded before it; duplicates are loaded once.
# crc32_generic must come first: without it `rdma link add` fails with
# "No such file or directory".
VM_MODULES=(crc32_generic udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe
  configfs ib_cm iw_cm rdma_cm rdma_ucm veth)

# Programs the guest always gets (looked up on the host's PATH).
VM_PROGRAMS=(ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat ib_send_bw
  ib_write_bw ib_read_bw ibv_devices ibv_devinfo)

vm_log() { printf 'vm: %s\n' "$*" >&2; }

# vm_skip REASON: the loud message a caller and a CI log cannot miss.
vm_skip() {
  printf '\n*** VM SKIPPED: %s ***\n\n' "$*" >&2
  return "$VM_SKIP"
}

# _vm_pkg_installed PKG: true when dpkg says PKG is installed.
_vm_pkg_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# vm_kernel_version: prints the guest kernel version, or fails.
vm_kernel_version() {
  if [[ -n "${VM_KERNEL_VER:-}" ]]; then
    printf '%s\n' "$VM_KERNEL_VER"
    return 0
  fi
  local img ver best=""
  # Newest last in version order; keep the last one that has rdma_rxe.
  while read -r img; do
    ver="${img#/boot/vmlinuz-}"
    if [[ -r "$img" ]] && modinfo -k "$ver" -n rdma_rxe >/dev/null 2>&1; then
      best="$ver"
    fi
  done < <(find /boot -maxdepth 1 -name 'vmlinuz-*' 2>/dev/null | sort -V)
  [[ -n "$best" ]] || return 1
  printf '%s\n' "$best"
}

# vm_install_deps: installs the missing packages of VM_PACKAGES with apt-get.
# Returns 0 when QEMU and a guest kernel with rdma_rxe are usable, 77 (after
# printing "VM SKIPPED: ...") when they are not and cannot be installed, and
# another non-zero status on a hard failure of a package that is not optional.
vm_install_deps() {
  local missing=() p
  if ! command -v dpkg-query >/dev/null 2>&1; then
    # Not Debian: usable only if the tools are already there.
    command -v qemu-system-x86_64 >/dev/null 2>&1 ||
      { vm_skip "no dpkg and no qemu-system-x86_64 on this machine"; return; }
  else
    for p in "${VM_PACKAGES[@]}"; do
      _vm_pkg_installed "$p" || missing+=("$p")
    done
  fi
  if ((${#missing[@]})); then
    vm_log "installing missing packages: ${missing[*]}"
    local sudo=()
    if ((EUID != 0)); then
      if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        sudo=(sudo -n)
      else
        vm_skip "not root and no password-less sudo to install: ${missing[*]}"
        return
      fi
    fi
    # Another engineer's apt-get may hold the dpkg lock: wait for it.
    local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get
      -o DPkg::Lock::Timeout=600 -y -q --no-install-recommends)
    # `apt-get update` once, only because something is missing.
    "${apt[@]}" update >&2 || vm_log "apt-get update failed; trying the cached lists"
    if ! "${apt[@]}" install "${missing[@]}" >&2; then
      vm_log "installing all at once failed; trying one package at a time"
      for p in "${missing[@]}"; do
        "${apt[@]}" install "$p" >&2 || vm_log "could not install $p"
      done
    fi
  fi
  # The two things without which there is no VM at all.
  command -v qemu-system-x86_64 >/dev/null 2>&1 ||
    { vm_skip "qemu-system-x86_64 is not installed and could not be installed"; return; }
  local ver
  ver="$(vm_kernel_version)" ||
    { vm_skip "no /boot/vmlinuz-* with rdma_rxe.ko (linux-image-amd64 missing?)"; return; }
  # The rest are hard requirements of the initramfs.
  [[ -x /bin/busybox ]] || { vm_log "busybox-static (/bin/busybox) is missing"; return 1; }
  for p in cpio gzip modinfo "${VM_PROGRAMS[@]}"; do
    command -v "$p" >/dev/null 2>&1 || { vm_log "missing program: $p"; return 1; }
  done
  vm_log "deps ok: qemu $(qemu-system-x86_64 --version | head -1 | awk '{print $4}'), guest kernel $ver"
  return 0
}

# _vm_is_elf FILE: true when FILE starts with the ELF magic.
_vm_is_elf() {
  local magic
  magic="$(LC_ALL=C head -c 4 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  [[ "$magic" == 7f454c46 ]]
}

# _vm_copy_file SRC STAGE: copies SRC (dereferenced) to STAGE/SRC. The parent
# directory is created through STAGE's own /bin -> usr/bin style links, so a
# path like /lib/x86_64-linux-gnu/libc.so.6 lands in the same place as
# /usr/lib/x86_64-linux-gnu/libc.so.6, as on the host.
_vm_copy_file() {
  local src="$1" stage="$2"
  [[ -e "$stage$src" ]] && return 0
  mkdir -p "$stage$(dirname "$src")"
  cp -L "$src" "$stage$src"
}

# _vm_copy_tree SRC STAGE: copies a directory as it is (symlinks kept).
_vm_copy_tree() {
  local src="$1" stage="$2"
  mkdir -p "$stage$(dirname "$src")"
  cp -a "$src" "$stage$(dirname "$src")/"
}

# _vm_ldd_closure FILE: prints the absolute paths of the shared libraries that
# ldd lists for FILE (ldd resolves the whole tree, interpreter included).
# Fails, naming the library, when one is "not found".
_vm_ldd_closure() {
  local out
  # A static executable makes ldd exit 1 ("not a dynamic executable").
  out="$(ldd "$1" 2>/dev/null)" || return 0
  if grep -q 'not found' <<<"$out"; then
    vm_log "ldd $1: $(grep 'not found' <<<"$out" | tr -s ' \t' ' ' | paste -sd';' -)"
    return 1
  fi
  awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' <<<"$out"
}

# _vm_module_paths VER: prints one path per module to insmod, in load order.
_vm_module_paths() {
  local ver="$1" m line path
  declare -A seen=()
  for m in "${VM_MODULES[@]}"; do
    # --show-depends prints "insmod PATH" for each dependency then the module
    # itself (dependencies first), or "builtin NAME" for built-in ones.
    while read -r line; do
      case "$line" in
        insmod\ *)
          path="$(awk '{print $2}' <<<"$line")"
          [[ -n "${seen[$path]:-}" ]] && continue
          seen[$path]=1
          printf '%s\n' "$path"
          ;;
      esac
    done < <(modprobe -S "$ver" --show-depends "$m" 2>/dev/null || true)
    # Fall back on modinfo if modprobe knew nothing (say, an old modules.dep).
    path="$(modinfo -k "$ver" -n "$m" 2>/dev/null || true)"
    if [[ "$path" == /* && -z "${seen[$path]:-}" ]]; then
      seen[$path]=1
      printf '%s\n' "$path"
    fi
    [[ -n "$path" ]] || { vm_log "module $m not found for kernel $ver"; return 1; }
  done
}

# The guest's /init. Placeholders @...@ are filled in by vm_build_initramfs.
_vm_init_script() {
  cat <<'EOF'
#!/bin/sh
# /init of the rdmx Soft-RoCE test guest (generated by tests/vm/lib.sh).
# PID 1 must never exit: every path ends in `poweroff -f`.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp TMPDIR=/tmp LANG=C.UTF-8
export RDMX_VM_IP=@IP@ RDMX_VM_RDMA=@RDMA@
export RDMX_VM_ADDR0=198.18.0.1 RDMX_VM_ADDR1=198.18.0.2

finish() {
  echo "RDMX_VM_EXIT=$1"
  sync
  poweroff -f
  sleep 5          # poweroff -f does not return; just in case
  echo o > /proc/sysrq-trigger
}
fail() { echo "vm-init: FAILED: $*"; finish 120; }

mkdir -p /proc /sys /dev /tmp /run
mount -t proc proc /proc
mount -t sysfs sysfs /sys
# devtmpfs makes /dev/infiniband/uverbs* and rdma_cm appear by themselves.
mount -t devtmpfs devtmpfs /dev || {
  mount -t tmpfs tmpfs /dev
  mknod -m 666 /dev/null c 1 3; mknod -m 666 /dev/zero c 1 5
  mknod -m 666 /dev/urandom c 1 9; mknod -m 600 /dev/console c 5 1
}
mkdir -p /dev/shm /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t devpts devpts /dev/pts 2>/dev/null || true
# /tmp stays the initramfs' own (already writable) directory: a project
# checked out under /tmp (CI clones there) has its build copied into it.
chmod 1777 /tmp
mount -t tmpfs tmpfs /run
# Kernel log levels: keep the console for our output.
echo 1 > /proc/sys/kernel/printk 2>/dev/null || true
# Allow unlimited locked memory (memory registration pins pages).
ulimit -l unlimited 2>/dev/null || true
ulimit -c 0 2>/dev/null || true

# Modules in the order of VM-RXE.md, dependencies first (see modules.list).
while read -r m; do
  [ -n "$m" ] || continue
  insmod "/rdmx/modules/$m" || fail "insmod $m"
done < /rdmx/modules.list

# The network: loopback, and a veth pair veth0 (198.18.0.1) <-> veth1 (198.18.0.2).
IP=$RDMX_VM_IP
$IP link set lo up
$IP link add veth0 type veth peer name veth1 || fail "ip link add veth"
$IP addr add 198.18.0.1/24 dev veth0
$IP addr add 198.18.0.2/24 dev veth1
$IP link set veth0 up
$IP link set veth1 up

# Both addresses live on one kernel, so traffic from .2 to .1 would be routed
# locally and never cross the veth pair. The recipe of VM-RXE.md forces it
# across: accept packets with a local source, no reverse-path filter...
for i in all default veth0 veth1; do
  echo 1 > /proc/sys/net/ipv4/conf/$i/accept_local
  echo 0 > /proc/sys/net/ipv4/conf/$i/rp_filter
done
# ...packets arriving on a veth are delivered locally first...
$IP rule add pref 10 iif veth0 lookup local
$IP rule add pref 11 iif veth1 lookup local
# ...packets between the two addresses leave by the other end's veth...
$IP route add 198.18.0.1/32 dev veth1 src 198.18.0.2 table 200
$IP route add 198.18.0.2/32 dev veth0 src 198.18.0.1 table 201
$IP rule add pref 20 from 198.18.0.2 to 198.18.0.1 lookup 200
$IP rule add pref 21 from 198.18.0.1 to 198.18.0.2 lookup 201
# ...and the local table moves after those rules.
$IP rule add pref 100 lookup local
$IP rule del pref 0

# One Soft-RoCE device on each end.
$RDMX_VM_RDMA link add rxe0 type rxe netdev veth0 || fail "rdma link add rxe0"
$RDMX_VM_RDMA link add rxe1 type rxe netdev veth1 || fail "rdma link add rxe1"
# Wait (at most ~10 s) for both ports to be ACTIVE.
n=0
while [ $n -lt 50 ]; do
  a=$(ibv_devinfo 2>/dev/null | grep -c PORT_ACTIVE)
  [ "$a" -ge 2 ] && break
  n=$((n + 1)); sleep 0.2
done
[ "$a" -ge 2 ] || { ibv_devinfo; fail "rxe ports not ACTIVE"; }
echo "vm-init: rxe0 (veth0 198.18.0.1) and rxe1 (veth1 198.18.0.2) ACTIVE"

# The caller's script; its status leaves the guest through the marker line.
cd /
sh /rdmx/guest.sh
finish $?
EOF
}

# Helpers for guest scripts: `. /rdmx/guest-lib.sh`.
_vm_guest_lib() {
  cat <<'EOF'
# /rdmx/guest-lib.sh — helpers for guest scripts (busybox sh).

# vm_wait_listen PORT [TENTHS]: waits until a TCP socket listens on PORT
# (default at most 10 s). perftest's server must listen before its client
# connects. Returns 1 on timeout.
vm_wait_listen() {
  _hex=$(printf '%04X' "$1")
  _n=0
  while [ "$_n" -lt "${2:-100}" ]; do
    # Field 2 is local_address as HEXIP:HEXPORT, field 4 the state (0A = LISTEN).
    if cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
        awk -v p=":$_hex" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }'; then
      return 0
    fi
    _n=$((_n + 1))
    sleep 0.1
  done
  return 1
}

# vm_timeout SECS CMD...: runs CMD, killing it after SECS seconds (status 124
# like coreutils, or busybox's 143 = killed by TERM).
vm_timeout() {
  _t=$1; shift
  timeout "$_t" "$@"
}
EOF
}

# vm_build_initramfs OUT.cpio.gz GUEST_SCRIPT [EXTRA_PATHS...]
# Builds the guest's whole root file system as a gzipped newc cpio archive.
# EXTRA_PATHS (files or directories) are copied at their own absolute paths,
# and every ELF among all copied files brings the shared libraries ldd lists.
vm_build_initramfs() {
  local out="$1" script="$2"
  shift 2
  [[ -r "$script" ]] || { vm_log "guest script not readable: $script"; return 1; }
  mkdir -p "$VM_WORK"
  local stage rc=0
  stage="$(mktemp -d "$VM_WORK/initramfs.XXXXXX")"
  _vm_stage_initramfs "$stage" "$out" "$script" "$@" || rc=$?
  rm -rf "$stage"
  return "$rc"
}

# _vm_stage_initramfs STAGE OUT SCRIPT [EXTRA_PATHS...]: the work of
# vm_build_initramfs in the empty directory STAGE.
_vm_stage_initramfs() {
  local stage="$1" out="$2" script="$3"
  shift 3
  local ver
  ver="$(vm_kernel_version)" || { vm_log "no guest kernel"; return 1; }

  # 1. The top-level layout. On a merged-/usr host, /bin is a link to usr/bin
  #    (and so on): make the same links, so files land where the host has them.
  local d
  mkdir -p "$stage"/{usr/bin,usr/sbin,usr/lib,usr/lib64,etc,proc,sys,dev,tmp,run,root,rdmx/modules}
  for d in bin sbin lib lib64; do
    if [[ -L "/$d" ]]; then
      ln -s "$(readlink "/$d")" "$stage/$d"
    else
      mkdir -p "$stage/$d"
    fi
  done

  # 2. busybox as the shell and the basic commands. Applet links are made
  #    only where no real file will go (iproute2's ip and rdma are real).
  cp /bin/busybox "$stage/bin/busybox"
  local applet
  while read -r applet; do
    [[ -n "$applet" && ! -e "$stage/$applet" && ! -L "$stage/$applet" ]] || continue
    mkdir -p "$stage/$(dirname "$applet")"
    ln -s /bin/busybox "$stage/$applet"
  done < <(/bin/busybox --list-full | sort)

  # 3. Real programs: iproute2 (full paths: busybox applets shadow them),
  #    perftest, ibverbs-utils. Each replaces a busybox applet link, if any.
  local ip_path rdma_path prog path files=()
  ip_path="$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v ip)" || { vm_log "no iproute2 ip"; return 1; }
  rdma_path="$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v rdma)" || { vm_log "no iproute2 rdma"; return 1; }
  files+=("$ip_path" "$rdma_path")
  for prog in "${VM_PROGRAMS[@]}"; do
    path="$(command -v "$prog")" || { vm_log "missing program: $prog"; return 1; }
    files+=("$path")
  done
  # 4. The rxe user-space provider (dlopen'ed by libibverbs) and its driver file.
  local rxe
  rxe="$(find /usr/lib/x86_64-linux-gnu/libibverbs -maxdepth 1 -name 'librxe-rdmav*.so' | sort | tail -1)"
  [[ -n "$rxe" ]] || { vm_log "librxe-rdmav*.so not found (ibverbs-providers)"; return 1; }
  files+=("$rxe" /etc/libibverbs.d/rxe.driver)

  for path in "${files[@]}"; do
    rm -f "$stage$path"   # a busybox applet link of the same name
    _vm_copy_file "$path" "$stage" || return 1
  done

  # 5. The caller's extra files and directories.
  for path in "$@"; do
    path="$(realpath -s "$path")"
    if [[ -d "$path" ]]; then
      _vm_copy_tree "$path" "$stage" || return 1
    elif [[ -e "$path" ]]; then
      _vm_copy_file "$path" "$stage" || return 1
    else
      vm_log "extra path does not exist: $path"
      return 1
    fi
  done

  # 6. Shared libraries of every ELF copied so far (ldd gives the closure).
  #    The files are looked at on the host, at the same path as in the stage.
  local f lib libs
  while IFS= read -r -d '' f; do
    _vm_is_elf "$f" || continue
    # The host file at the same path as this staged copy.
    libs="$(_vm_ldd_closure "${f#"$stage"}")" || return 1
    while read -r lib; do
      [[ -z "$lib" ]] || _vm_copy_file "$lib" "$stage" || return 1
    done <<<"$libs"
  done < <(find "$stage" -type f ! -path "$stage/rdmx/*" -print0 | sort -z)

  # Smaller image: drop debug info from the copies (the originals are untouched).
  if [[ "${VM_KEEP_DEBUG:-0}" != 1 ]] && command -v strip >/dev/null 2>&1; then
    while IFS= read -r -d '' f; do
      [[ "$f" == "$stage/bin/busybox" || "$f" == "$stage/usr/bin/busybox" ]] && continue
      if _vm_is_elf "$f"; then strip --strip-debug "$f" 2>/dev/null || true; fi
    done < <(find "$stage" -type f -print0)
  fi

  # 7. Kernel modules, uncompressed (busybox insmod may not read .ko.xz/.zst).
  local i=0 name
  : >"$stage/rdmx/modules.list"
  while read -r path; do
    i=$((i + 1))
    name="$(printf '%02d-%s' "$i" "$(basename "$path")")"
    case "$path" in
      *.xz) name="${name%.xz}"; xz -dc "$path" >"$stage/rdmx/modules/$name" ;;
      *.zst) name="${name%.zst}"; zstd -qdc "$path" >"$stage/rdmx/modules/$name" ;;
      *.gz) name="${name%.gz}"; gzip -dc "$path" >"$stage/rdmx/modules/$name" ;;
      *) cp "$path" "$stage/rdmx/modules/$name" ;;
    esac
    printf '%s\n' "$name" >>"$stage/rdmx/modules.list"
  done < <(_vm_module_paths "$ver")
  ((i > 0)) || { vm_log "no kernel modules found for $ver"; return 1; }

  # 8. /init, the guest script, helpers and a minimal /etc.
  _vm_init_script | sed -e "s|@IP@|$ip_path|" -e "s|@RDMA@|$rdma_path|" >"$stage/init"
  chmod 755 "$stage/init"
  cp "$script" "$stage/rdmx/guest.sh"
  _vm_guest_lib >"$stage/rdmx/guest-lib.sh"
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$stage/etc/passwd"
  printf 'root:x:0:\n' >"$stage/etc/group"
  printf '127.0.0.1 localhost\n198.18.0.1 rdmx-vm0\n198.18.0.2 rdmx-vm1\n::1 localhost\n' >"$stage/etc/hosts"
  printf 'passwd: files\ngroup: files\nhosts: files\n' >"$stage/etc/nsswitch.conf"

  # 9. The archive: sorted names, fixed times and owners -> same bytes for
  #    the same inputs.
  mkdir -p "$(dirname "$out")"
  find "$stage" -exec touch -h -d @0 {} +
  (cd "$stage" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
    cpio --null -o -H newc -R 0:0 --reproducible --quiet) | gzip -n -6 >"$out.tmp"
  mv "$out.tmp" "$out"
  vm_log "initramfs $out: $(du -h "$out" | cut -f1), $(wc -l <"$stage/rdmx/modules.list") modules, kernel $ver"
}

# The qemu process of the running vm_boot (killed by vm_cleanup).
_vm_qemu_pid=""

_vm_tail_pid=""

# vm_cleanup: stops a running guest. Safe to call any time, more than once.
# (The pid is the one of `timeout`, which passes the TERM on to qemu; KILL
# goes to timeout's whole process group, qemu included.)
vm_cleanup() {
  if [[ -n "$_vm_qemu_pid" ]]; then
    kill -TERM "$_vm_qemu_pid" 2>/dev/null || true
    local i
    for i in 1 2 3 4 5 6 7 8 9 10; do
      kill -0 "$_vm_qemu_pid" 2>/dev/null || break
      sleep 0.5
    done
    kill -KILL -- "-$_vm_qemu_pid" 2>/dev/null || kill -KILL "$_vm_qemu_pid" 2>/dev/null || true
    wait "$_vm_qemu_pid" 2>/dev/null || true
    _vm_qemu_pid=""
    echo "vm: guest stopped (interrupted)" >&2
  fi
  if [[ -n "$_vm_tail_pid" ]]; then
    kill "$_vm_tail_pid" 2>/dev/null || true
    _vm_tail_pid=""
  fi
}

# vm_boot INITRAMFS TIMEOUT_S LOGFILE
# Boots the guest (software emulation only: never -enable-kvm, it hangs here),
# shows its serial console live and saves it in LOGFILE. Returns the status
# of the guest script from the `RDMX_VM_EXIT=` marker; 124 when the guest ran
# past TIMEOUT_S, 125 when it stopped without the marker (kernel panic, ...).
# An interrupt (Ctrl-C, TERM) or the caller's exit stops qemu.
vm_boot() {
  local initrd="$1" timeout_s="$2" logfile="$3" ver
  ver="$(vm_kernel_version)" || { vm_log "no guest kernel"; return 1; }
  mkdir -p "$(dirname "$logfile")"
  : >"$logfile"
  # shellcheck disable=SC2054  # the commas are qemu's, not array separators
  local qemu=(qemu-system-x86_64 -accel tcg,thread=multi -cpu max
    -m "${VM_MEM_MB:-2048}" -smp 2
    -kernel "/boot/vmlinuz-$ver" -initrd "$initrd"
    -append "console=ttyS0 panic=-1 quiet"
    -nographic -no-reboot -nic none)
  vm_log "booting (timeout ${timeout_s}s): ${qemu[*]}"
  local start=$SECONDS
  # timeout sends TERM at the limit, KILL 10 s later; the serial console
  # (qemu's stdout) goes straight to the log file.
  timeout -k 10 "$timeout_s" "${qemu[@]}" </dev/null >"$logfile" 2>&1 &
  _vm_qemu_pid=$!
  # Stop qemu on an interrupt or exit; the caller's traps come back after.
  local saved_traps
  saved_traps="$(trap -p INT TERM EXIT)"
  trap 'vm_cleanup; exit 130' INT
  trap 'vm_cleanup; exit 143' TERM
  trap 'vm_cleanup' EXIT
  # Show the console live; tail ends when qemu's timeout process ends.
  # (carriage returns and the BIOS's terminal escapes are dropped from the
  # view). It runs in the background: bash runs a trap during `wait`, but
  # only after a foreground command ends.
  tail -n +1 -f --pid="$_vm_qemu_pid" "$logfile" |
    sed -u -e 's/\r//g' -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1bc//g' &
  _vm_tail_pid=$!
  local rc=0
  wait "$_vm_qemu_pid" || rc=$?
  _vm_qemu_pid=""
  wait "$_vm_tail_pid" 2>/dev/null || true
  _vm_tail_pid=""
  trap - INT TERM EXIT
  eval "$saved_traps"
  local marker
  marker="$(tr -d '\r' <"$logfile" | grep -a -o 'RDMX_VM_EXIT=[0-9]*' | tail -1 || true)"
  vm_log "guest stopped after $((SECONDS - start)) s (qemu status $rc, marker '${marker:-none}')"
  if [[ -n "$marker" ]]; then
    return "${marker#RDMX_VM_EXIT=}"
  fi
  if ((rc == 124 || rc == 137)); then
    vm_log "TIMEOUT: the guest ran past ${timeout_s}s"
    return 124
  fi
  vm_log "the guest stopped without an RDMX_VM_EXIT marker (see $logfile)"
  return 125
}
