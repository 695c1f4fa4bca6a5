//! A real pgbouncer (Debian's package) in front of a [`PgServer`], in transaction pooling
//! mode, on its own Unix socket directory and port; stopped when dropped.
//!
//! It logs in to the server over the server's Unix socket as `crond_test` (trust there) with
//! at most `pool_size` server connections, so that every client shares them. pgbouncer refuses
//! to run as root: as root it runs as `postgres`, as the server does.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::postgres::PgServer;

const MISSING: &str = "pgbouncer is missing: run .ci/deps (Debian package pgbouncer)";

pub struct PgBouncer {
    dir: tempfile::TempDir,
    port: u16,
    child: Child,
}

impl PgBouncer {
    /// Starts pgbouncer for the server's database `crond`. `ignore_options`: whether it lets a
    /// client's `options` startup parameter through unread (`ignore_startup_parameters`).
    pub fn start(pg: &PgServer, pool_size: u32, ignore_options: bool) -> PgBouncer {
        let program = Path::new("/usr/sbin/pgbouncer");
        assert!(program.exists(), "{MISSING}");
        let as_root = super::root::is_root();
        let dir = tempfile::Builder::new()
            .prefix("crond-pgbouncer-")
            .tempdir_in("/tmp")
            .expect("create pgbouncer's directory");
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
        let port = free_port();
        let d = dir.path().display();
        let ignore = if ignore_options {
            "ignore_startup_parameters = options\n"
        } else {
            ""
        };
        fs::write(
            dir.path().join("pgbouncer.ini"),
            format!(
                "[databases]\n\
                 crond = host={} port={} dbname=crond user=crond_test\n\
                 [pgbouncer]\n\
                 listen_addr = 127.0.0.1\n\
                 listen_port = {port}\n\
                 unix_socket_dir = {d}\n\
                 auth_type = trust\n\
                 auth_file = {d}/users.txt\n\
                 pool_mode = transaction\n\
                 default_pool_size = {pool_size}\n\
                 max_client_conn = 50\n\
                 {ignore}\
                 logfile = {d}/pgbouncer.log\n\
                 pidfile = {d}/pgbouncer.pid\n",
                pg.socket_dir().display(),
                pg.port()
            ),
        )
        .expect("write pgbouncer.ini");
        fs::write(
            dir.path().join("users.txt"),
            "\"crond_test\" \"\"\n\"root\" \"\"\n",
        )
        .expect("write users.txt");
        let mut cmd = if as_root {
            let status = Command::new("chown")
                .arg("-R")
                .arg("postgres:postgres")
                .arg(dir.path())
                .status()
                .expect("chown");
            assert!(status.success());
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        let child = cmd
            .arg(dir.path().join("pgbouncer.ini"))
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect(MISSING);
        let bouncer = PgBouncer { dir, port, child };
        let socket = bouncer.socket_dir().join(format!(".s.PGSQL.{port}"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while !socket.exists() {
            assert!(
                Instant::now() < deadline,
                "pgbouncer did not start:\n{}",
                bouncer.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        bouncer
    }

    pub fn socket_dir(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    /// The connection string through pgbouncer's socket, as `crond_test`.
    pub fn conninfo(&self) -> String {
        format!(
            "host={} port={} dbname=crond user=crond_test",
            self.dir.path().display(),
            self.port
        )
    }

    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("pgbouncer.log")).unwrap_or_default()
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        // pgbouncer itself (its pid file), then runuser if it is still there.
        if let Ok(pid) = fs::read_to_string(self.dir.path().join("pgbouncer.pid")) {
            let _ = Command::new("kill").arg(pid.trim()).status();
        }
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("the bound address").port()
}
