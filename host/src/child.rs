//! Child processes of a Memoria process (nodes, the console, snapshot runs).

/// The kernel kills the child when this process dies, even by SIGKILL: a node must not
/// outlive the supervisor that holds its log, nor a console or snapshot run its starter.
pub fn die_with_parent(cmd: &mut tokio::process::Command) {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}
