//! A Linux kernel with netem for tests: boots the installed Debian kernel under qemu (TCG)
//! with this machine's root file system visible read-only over 9p, runs a shell script as
//! root inside, and returns its output and exit status.
//!
//! The kernel is the newest `/lib/modules/VERSION` that has `sch_netem.ko` and a matching
//! `/boot/vmlinuz-VERSION` (Debian's `linux-image-amd64`). The initramfs is written here
//! (cpio newc): busybox (`busybox-static`), the modules that 9p over virtio, netem and veth
//! need (in the order `modules.dep` gives), and an `/init` that loads them, mounts the host's
//! root over 9p, mounts proc, sys, dev and a tmpfs on `/tmp` and `/run` in it, chroots and
//! runs the script. The host's `/tmp` stays visible at [`GUEST_HOST_TMP`] (see
//! [`guest_path`]), so binaries built under `/tmp` run in the guest. The script's stdout
//! and stderr come back over a second serial port, the kernel's console over the first.
//!
//! ```no_run
//! use tsload_testbed::vm::{Vm, VmOptions};
//!
//! let vm = Vm::locate().unwrap();
//! let out = vm.run("tc qdisc add dev lo root netem delay 1ms && tc qdisc show dev lo", &VmOptions::default()).unwrap();
//! assert_eq!(out.exit_code, 0, "{}", out.output);
//! ```
//!
//! KVM is not used (on this project's machines it does not work): `-accel tcg -cpu max`.
//! qemu is killed when the time limit passes, when the `run` call unwinds, and (through
//! the parent-death signal) when the test process dies; its temp dir is removed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{TestbedError, locate, process, scratch};

/// The modules the guest loads (with their dependencies, from `modules.dep`): the virtio
/// PCI transport, 9p over virtio, netem, tbf and htb, and veth.
pub const GUEST_MODULES: [&str; 7] = [
    "virtio_pci",
    "9pnet_virtio",
    "9p",
    "sch_netem",
    "sch_tbf",
    "sch_htb",
    "veth",
];

/// Where the host's `/tmp` is seen inside the guest (the guest's `/tmp` is its own tmpfs).
pub const GUEST_HOST_TMP: &str = "/run/host-tmp";

/// Where [`VmOptions::out_dir`] is mounted (writable) inside the guest.
pub const GUEST_OUT_DIR: &str = "/run/vm-out";

/// The line `/init` prints after the script, with its exit status.
const EXIT_SENTINEL: &str = "TSLOAD-VM-EXIT";

/// The Debian package of each thing the VM needs, for the error that names what is missing.
const QEMU_PACKAGE: &str = "qemu-system-x86";
const KERNEL_PACKAGE: &str = "linux-image-amd64";
const BUSYBOX_PACKAGE: &str = "busybox-static";

/// How to run a script in the VM.
#[derive(Debug, Clone)]
pub struct VmOptions {
    /// The whole run's time limit, boot included; qemu is killed after it.
    pub timeout: Duration,
    /// Guest memory in MiB.
    pub memory_mib: u32,
    /// Guest CPUs.
    pub cpus: u32,
    /// Environment variables the script starts with (besides PATH, HOME and TMPDIR).
    pub env: Vec<(String, String)>,
    /// The script's working directory, a host path (mapped with [`guest_path`]); default `/`.
    pub workdir: Option<PathBuf>,
    /// A host directory mounted writable at [`GUEST_OUT_DIR`], for files the script makes.
    pub out_dir: Option<PathBuf>,
}

impl Default for VmOptions {
    fn default() -> Self {
        VmOptions {
            timeout: Duration::from_secs(300),
            memory_mib: 1024,
            cpus: 2,
            env: Vec::new(),
            workdir: None,
            out_dir: None,
        }
    }
}

/// What a run in the VM gave back.
#[derive(Debug, Clone)]
pub struct VmOutput {
    /// The script's exit status.
    pub exit_code: i32,
    /// The script's stdout and stderr, interleaved.
    pub output: String,
    /// The kernel's console (boot messages, `/init`'s own errors).
    pub console: String,
    /// From qemu's start to its end.
    pub elapsed: Duration,
}

/// The kernel, modules, busybox and qemu a run needs, found on this machine.
#[derive(Debug, Clone)]
pub struct Vm {
    /// `qemu-system-x86_64`.
    pub qemu: PathBuf,
    /// The kernel image (`/boot/vmlinuz-VERSION`).
    pub kernel: PathBuf,
    /// The kernel's release (`6.1.0-56-amd64`).
    pub release: String,
    /// The module files to load, dependencies first.
    pub modules: Vec<PathBuf>,
    /// A statically linked busybox.
    pub busybox: PathBuf,
}

/// The path at which the guest sees a host path: the same, except that the host's `/tmp`
/// is under [`GUEST_HOST_TMP`].
pub fn guest_path(host: &Path) -> PathBuf {
    match host.strip_prefix("/tmp") {
        Ok(rest) => Path::new(GUEST_HOST_TMP).join(rest),
        Err(_) => host.to_path_buf(),
    }
}

/// Quotes `s` for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The VictoriaMetrics server binary (`$TSLOAD_VICTORIA_METRICS`, else Debian's
/// `victoria-metrics` on PATH), for a guest script to start in a namespace of its own;
/// the error names the package to install.
pub fn victoria_metrics_binary() -> Result<PathBuf, TestbedError> {
    locate::binary(
        "victoria-metrics",
        "TSLOAD_VICTORIA_METRICS",
        "the VictoriaMetrics server, for the R1 sweep in the netem VM",
        "victoria-metrics",
    )
}

impl Vm {
    /// Finds qemu, the newest kernel with netem, its modules and busybox; errors name the
    /// Debian package to install.
    pub fn locate() -> Result<Vm, TestbedError> {
        let qemu = locate::tool(
            "qemu-system-x86_64",
            "the netem VM's emulator",
            QEMU_PACKAGE,
        )?;
        let busybox = find_busybox()?;
        let (release, kernel) = find_kernel(Path::new("/lib/modules"), Path::new("/boot"))?;
        let dir = Path::new("/lib/modules").join(&release);
        let dep_text = std::fs::read_to_string(dir.join("modules.dep"))
            .map_err(|e| TestbedError::io(format!("reading {}/modules.dep", dir.display()), e))?;
        let order =
            module_order(&dep_text, &GUEST_MODULES).map_err(|why| TestbedError::Missing {
                what: format!("kernel modules for the netem VM ({why})"),
                looked: format!("{}/modules.dep", dir.display()),
                install: format!("reinstall `{KERNEL_PACKAGE}`"),
            })?;
        let mut modules = Vec::new();
        for rel in order {
            let path = dir.join(&rel);
            if !path.is_file() {
                return Err(TestbedError::Missing {
                    what: format!(
                        "kernel module {rel} (uncompressed: busybox's insmod loads .ko files only)"
                    ),
                    looked: path.display().to_string(),
                    install: format!("reinstall `{KERNEL_PACKAGE}`"),
                });
            }
            modules.push(path);
        }
        Ok(Vm {
            qemu,
            kernel,
            release,
            modules,
            busybox,
        })
    }

    /// Boots the VM, runs `script` with `/bin/sh` as root in the host's root file system
    /// (read-only, with its own `/tmp` and `/run`), and powers off. Errors if qemu cannot
    /// start, if the run passes `options.timeout`, or if the guest ends without reporting
    /// the script's exit status; a script that fails is an `Ok` with its `exit_code`.
    pub fn run(&self, script: &str, options: &VmOptions) -> Result<VmOutput, TestbedError> {
        let dir =
            scratch::dir("vm").map_err(|e| TestbedError::io("making the VM's temp dir", e))?;
        let initramfs = dir.path().join("initramfs.cpio");
        let console_log = dir.path().join("console.log");
        let output_log = dir.path().join("output.log");
        self.write_initramfs(&initramfs, script, options)?;

        let mut command = Command::new(&self.qemu);
        command
            .args(["-accel", "tcg", "-cpu", "max", "-nodefaults", "-no-reboot"])
            .args(["-display", "none", "-monitor", "none"])
            .args(["-m", &options.memory_mib.to_string()])
            .args(["-smp", &options.cpus.max(1).to_string()])
            .arg("-kernel")
            .arg(&self.kernel)
            .arg("-initrd")
            .arg(&initramfs)
            .args([
                "-append",
                "console=ttyS0 panic=-1 quiet loglevel=3 rdinit=/init",
            ])
            .arg("-serial")
            .arg(format!("file:{}", console_log.display()))
            .arg("-serial")
            .arg(format!("file:{}", output_log.display()))
            .args([
                "-virtfs",
                "local,path=/,mount_tag=hostroot,readonly=on,security_model=none,multidevs=remap",
            ]);
        if let Some(out) = &options.out_dir {
            command.arg("-virtfs").arg(format!(
                "local,path={},mount_tag=vmout,security_model=none,multidevs=remap",
                out.display()
            ));
        }
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(
            std::fs::File::create(dir.path().join("qemu.log"))
                .map(Stdio::from)
                .map_err(|e| TestbedError::io("creating qemu's log", e))?,
        );
        let started = Instant::now();
        let child = process::spawn(command).map_err(|source| TestbedError::Spawn {
            program: self.qemu.clone(),
            source,
        })?;
        let mut qemu = KillOnDrop(child);
        let status = loop {
            match qemu.0.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() < options.timeout => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Ok(None) => {
                    let _ = qemu.0.kill();
                    let _ = qemu.0.wait();
                    return Err(TestbedError::Timeout {
                        what: "the netem VM's script".to_string(),
                        timeout: options.timeout,
                        detail: format!(
                            "qemu killed\n--- script output (tail) ---\n{}\n--- console (tail) ---\n{}",
                            tail(&read_lossy(&output_log), 60),
                            tail(&read_lossy(&console_log), 30)
                        ),
                    });
                }
                Err(e) => return Err(TestbedError::io("waiting for qemu", e)),
            }
        };
        let elapsed = started.elapsed();
        let raw_output = read_lossy(&output_log);
        let console = read_lossy(&console_log);
        let (output, exit_code) = split_sentinel(&raw_output);
        match exit_code {
            Some(exit_code) => Ok(VmOutput {
                exit_code,
                output,
                console,
                elapsed,
            }),
            None => Err(TestbedError::answer(
                "the netem VM",
                format!(
                    "qemu ended ({status}) without the script's exit status\n--- qemu ---\n{}\n--- script output (tail) ---\n{}\n--- console (tail) ---\n{}",
                    tail(&read_lossy(&dir.path().join("qemu.log")), 20),
                    tail(&raw_output, 60),
                    tail(&console, 40)
                ),
            )),
        }
    }

    fn write_initramfs(
        &self,
        path: &Path,
        script: &str,
        options: &VmOptions,
    ) -> Result<(), TestbedError> {
        let read = |p: &Path| {
            std::fs::read(p).map_err(|e| TestbedError::io(format!("reading {}", p.display()), e))
        };
        let mut cpio = Newc::default();
        for d in ["bin", "dev", "proc", "sys", "host", "modules"] {
            cpio.dir(d);
        }
        cpio.char_device("dev/console", 5, 1);
        cpio.file("bin/busybox", 0o755, &read(&self.busybox)?);
        let mut names = Vec::new();
        for (i, module) in self.modules.iter().enumerate() {
            let name = format!("modules/{i:02}.ko");
            cpio.file(&name, 0o644, &read(module)?);
            names.push(format!("/{name}"));
        }
        cpio.file("init", 0o755, init_script(&names, options).as_bytes());
        cpio.file("script.sh", 0o755, script.as_bytes());
        let bytes = cpio.finish();
        std::fs::write(path, bytes)
            .map_err(|e| TestbedError::io(format!("writing {}", path.display()), e))
    }
}

/// qemu, killed and reaped if the run ends early (an error or a panic).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The guest's `/init`: busybox sh, loads the modules, mounts, chroots into the host's
/// root, runs `/script.sh` there and prints the sentinel with its status.
fn init_script(modules: &[String], options: &VmOptions) -> String {
    let mut s = String::from("#!/bin/busybox sh\nB=/bin/busybox\n");
    s.push_str("fail() { echo \"tsload-vm init: $*\" >&3; echo \"TSLOAD-VM-EXIT 125\" >&3; $B poweroff -f; }\n");
    s.push_str("$B mount -t proc proc /proc\n$B mount -t sysfs sys /sys\n");
    s.push_str("$B mount -t devtmpfs dev /dev || fail mounting devtmpfs\nexec 3>/dev/ttyS1\n");
    for m in modules {
        let _ = writeln!(s, "$B insmod {m} || fail insmod {m}");
    }
    s.push_str("$B mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=512000,cache=loose hostroot /host || fail mounting the host root\n");
    s.push_str("$B mount -t proc proc /host/proc || fail proc\n");
    s.push_str("$B mount -t sysfs sys /host/sys || fail sys\n");
    s.push_str("$B mount -t devtmpfs dev /host/dev || fail dev\n");
    s.push_str("$B mount -t tmpfs run /host/run || fail run\n");
    let _ = writeln!(
        s,
        "$B mkdir -p /host{GUEST_HOST_TMP} /host{GUEST_OUT_DIR} /host/run/netns /host/run/lock"
    );
    let _ = writeln!(
        s,
        "$B mount -o bind /host/tmp /host{GUEST_HOST_TMP} || fail binding the host tmp"
    );
    s.push_str("$B mount -t tmpfs tmp /host/tmp || fail tmp\n$B chmod 1777 /host/tmp\n");
    s.push_str("$B mkdir -p /host/dev/pts /host/dev/shm\n$B mount -t devpts devpts /host/dev/pts\n$B mount -t tmpfs shm /host/dev/shm\n");
    if options.out_dir.is_some() {
        let _ = writeln!(
            s,
            "$B mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 vmout /host{GUEST_OUT_DIR} || fail mounting the out dir"
        );
    }
    s.push_str("$B cp /script.sh /host/tmp/tsload-vm-script.sh || fail copying the script\n");
    s.push_str("$B ip link set lo up\n");
    let workdir = options
        .workdir
        .as_deref()
        .map(guest_path)
        .unwrap_or_else(|| PathBuf::from("/"));
    let mut env = String::from(
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TMPDIR=/tmp",
    );
    for (k, v) in &options.env {
        let _ = write!(env, " {k}={}", shell_quote(v));
    }
    let _ = writeln!(
        s,
        "$B chroot /host /usr/bin/env -i {env} /bin/sh -c {} >&3 2>&3 </dev/null",
        shell_quote(&format!(
            "cd {} && exec /bin/sh /tmp/tsload-vm-script.sh",
            shell_quote(&workdir.to_string_lossy())
        ))
    );
    let _ = writeln!(s, "echo \"{EXIT_SENTINEL} $?\" >&3");
    s.push_str("$B sync\n$B poweroff -f\n");
    s
}

/// Splits the sentinel line off the script's output: (the output before it, the status).
fn split_sentinel(raw: &str) -> (String, Option<i32>) {
    let raw = raw.replace("\r\n", "\n");
    let Some(at) = raw.rfind(EXIT_SENTINEL) else {
        return (raw, None);
    };
    let code = raw[at + EXIT_SENTINEL.len()..]
        .lines()
        .next()
        .and_then(|l| l.trim().parse().ok());
    (raw[..at].to_string(), code)
}

fn read_lossy(path: &Path) -> String {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn find_busybox() -> Result<PathBuf, TestbedError> {
    for p in ["/bin/busybox", "/usr/bin/busybox"] {
        let path = Path::new(p);
        if path.is_file() {
            return Ok(path.to_path_buf());
        }
    }
    Err(TestbedError::Missing {
        what: "`busybox` (the netem VM's init)".to_string(),
        looked: "/bin/busybox, /usr/bin/busybox".to_string(),
        install: format!(
            "install the Debian package `{BUSYBOX_PACKAGE}` (`sudo apt-get install {BUSYBOX_PACKAGE}`), or run `cargo xtask test`"
        ),
    })
}

/// The newest kernel release under `modules` with `sch_netem.ko` and a `vmlinuz-RELEASE`
/// under `boot`.
fn find_kernel(modules: &Path, boot: &Path) -> Result<(String, PathBuf), TestbedError> {
    let mut found: Vec<(String, PathBuf)> = std::fs::read_dir(modules)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|release| {
                    modules
                        .join(release)
                        .join("kernel/net/sched/sch_netem.ko")
                        .is_file()
                })
                .filter_map(|release| {
                    let image = boot.join(format!("vmlinuz-{release}"));
                    image.is_file().then_some((release, image))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort_by_key(|a| version_key(&a.0));
    found.pop().ok_or_else(|| TestbedError::Missing {
        what: "a kernel with sch_netem for the netem VM".to_string(),
        looked: format!(
            "{}/*/kernel/net/sched/sch_netem.ko with {}/vmlinuz-*",
            modules.display(),
            boot.display()
        ),
        install: format!(
            "install the Debian package `{KERNEL_PACKAGE}` (`sudo apt-get install {KERNEL_PACKAGE}`), or run `cargo xtask test`"
        ),
    })
}

/// A release string as numbers and words, so `6.10.0` sorts after `6.9.0`.
fn version_key(release: &str) -> Vec<(u64, String)> {
    let mut key = Vec::new();
    let mut rest = release;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits > 0 {
            key.push((rest[..digits].parse().unwrap_or(u64::MAX), String::new()));
            rest = &rest[digits..];
        } else {
            let word = rest
                .find(|c: char| c.is_ascii_digit())
                .unwrap_or(rest.len());
            key.push((0, rest[..word].to_string()));
            rest = &rest[word..];
        }
    }
    key
}

/// The module files (paths relative to the modules dir) to load for `wanted`, each after
/// its dependencies, from the text of `modules.dep`.
fn module_order(dep_text: &str, wanted: &[&str]) -> Result<Vec<String>, String> {
    let mut deps: Vec<(String, Vec<String>)> = Vec::new();
    for line in dep_text.lines() {
        let Some((module, rest)) = line.split_once(':') else {
            continue;
        };
        deps.push((
            module.trim().to_string(),
            rest.split_whitespace().map(str::to_string).collect(),
        ));
    }
    let name_of = |path: &str| -> String {
        let file = path.rsplit('/').next().unwrap_or(path);
        file.split(".ko").next().unwrap_or(file).replace('-', "_")
    };
    let mut order: Vec<String> = Vec::new();
    fn visit(
        path: &str,
        deps: &[(String, Vec<String>)],
        order: &mut Vec<String>,
        depth: usize,
    ) -> Result<(), String> {
        if order.iter().any(|p| p == path) {
            return Ok(());
        }
        if depth > 64 {
            return Err(format!("dependency loop at {path}"));
        }
        let Some((_, needs)) = deps.iter().find(|(p, _)| p == path) else {
            return Err(format!("{path} is not in modules.dep"));
        };
        for need in needs {
            visit(need, deps, order, depth + 1)?;
        }
        order.push(path.to_string());
        Ok(())
    }
    for name in wanted {
        let wanted_name = name.replace('-', "_");
        let path = deps
            .iter()
            .find(|(p, _)| name_of(p) == wanted_name)
            .map(|(p, _)| p.clone())
            .ok_or_else(|| format!("no module {name}"))?;
        visit(&path, &deps, &mut order, 0)?;
    }
    Ok(order)
}

/// A cpio archive in the "newc" format, as the kernel unpacks an initramfs.
#[derive(Default)]
struct Newc {
    bytes: Vec<u8>,
    ino: u32,
}

impl Newc {
    fn entry(&mut self, name: &str, mode: u32, rdev: (u32, u32), data: &[u8]) {
        self.ino += 1;
        let header = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            self.ino,
            mode,
            0,
            0,
            1,
            0,
            data.len(),
            0,
            0,
            rdev.0,
            rdev.1,
            name.len() + 1,
            0
        );
        self.bytes.extend_from_slice(header.as_bytes());
        self.bytes.extend_from_slice(name.as_bytes());
        self.bytes.push(0);
        self.pad();
        self.bytes.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.bytes.len().is_multiple_of(4) {
            self.bytes.push(0);
        }
    }

    fn dir(&mut self, name: &str) {
        self.entry(name, 0o040_755, (0, 0), &[]);
    }

    fn file(&mut self, name: &str, perm: u32, data: &[u8]) {
        self.entry(name, 0o100_000 | perm, (0, 0), data);
    }

    fn char_device(&mut self, name: &str, major: u32, minor: u32) {
        self.entry(name, 0o020_600, (major, minor), &[]);
    }

    fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, (0, 0), &[]);
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_come_after_their_dependencies() {
        let dep = "kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/fscache/fscache.ko kernel/fs/netfs/netfs.ko\n\
                   kernel/net/9p/9pnet.ko:\n\
                   kernel/fs/fscache/fscache.ko: kernel/fs/netfs/netfs.ko\n\
                   kernel/fs/netfs/netfs.ko:\n\
                   kernel/net/sched/sch_netem.ko:\n";
        let order = module_order(dep, &["9p", "sch_netem"]).unwrap();
        let at = |m: &str| order.iter().position(|p| p.ends_with(m)).unwrap();
        assert!(at("/netfs.ko") < at("/fscache.ko"), "{order:?}");
        assert!(at("/fscache.ko") < at("/9p.ko"), "{order:?}");
        assert!(at("/9pnet.ko") < at("/9p.ko"), "{order:?}");
        assert_eq!(order.len(), 5);
        assert!(module_order(dep, &["veth"]).unwrap_err().contains("veth"));
    }

    #[test]
    fn newer_kernels_sort_later() {
        assert!(version_key("6.10.0-1-amd64") > version_key("6.9.0-3-amd64"));
        assert!(version_key("6.1.0-56-amd64") > version_key("6.1.0-9-amd64"));
    }

    #[test]
    fn host_tmp_is_mapped() {
        assert_eq!(
            guest_path(Path::new("/tmp/t/debug/tsload")),
            Path::new("/run/host-tmp/t/debug/tsload")
        );
        assert_eq!(guest_path(Path::new("/work/x")), Path::new("/work/x"));
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
    }

    #[test]
    fn the_sentinel_carries_the_status() {
        let (out, code) = split_sentinel("hello\r\nworld\r\nTSLOAD-VM-EXIT 3\r\n");
        assert_eq!(out, "hello\nworld\n");
        assert_eq!(code, Some(3));
        assert_eq!(split_sentinel("no end").1, None);
    }

    #[test]
    fn newc_entries_are_aligned() {
        let mut c = Newc::default();
        c.file("init", 0o755, b"#!/bin/sh\n");
        let bytes = c.finish();
        assert!(bytes.starts_with(b"070701"));
        assert_eq!(bytes.len() % 4, 0);
        assert!(bytes.windows(10).any(|w| w == b"TRAILER!!!"));
    }

    #[test]
    fn a_run_past_its_time_limit_is_killed_with_an_error() {
        let vm = Vm::locate().unwrap_or_else(|e| panic!("the netem VM cannot run here: {e}"));
        let options = VmOptions {
            timeout: Duration::from_secs(3),
            ..VmOptions::default()
        };
        let started = Instant::now();
        let e = vm.run("sleep 600", &options).unwrap_err();
        assert!(matches!(e, TestbedError::Timeout { .. }), "{e}");
        assert!(e.to_string().contains("qemu killed"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn the_vm_runs_a_script_in_a_kernel_with_netem() {
        let vm = Vm::locate().unwrap_or_else(|e| panic!("the netem VM cannot run here: {e}"));
        let out = vm
            .run(
                "uname -r; tc qdisc add dev lo root netem delay 1ms && tc qdisc show dev lo; \
                 test -x /usr/bin/busybox && echo host-root-visible; touch /tmp/w && echo tmp-writable; exit 3",
                &VmOptions::default(),
            )
            .unwrap();
        assert_eq!(out.exit_code, 3, "{}\n{}", out.output, out.console);
        assert!(out.output.contains(&vm.release), "{}", out.output);
        assert!(out.output.contains("qdisc netem"), "{}", out.output);
        assert!(out.output.contains("delay 1ms"), "{}", out.output);
        assert!(out.output.contains("host-root-visible"), "{}", out.output);
        assert!(out.output.contains("tmp-writable"), "{}", out.output);
    }
}
