//! A real, private PostgreSQL server for one test: initdb into a fresh directory under /tmp, its
//! own Unix socket directory and a free port on 127.0.0.1, stopped and removed when dropped.
//!
//! initdb and postgres refuse to run as root: as root (the suite's usual user) they run as the
//! `postgres` system user, which Debian's package creates, through `runuser`; as anyone else
//! they run as that user. Authentication: trust on the socket, SCRAM-SHA-256 on TCP (role
//! `crond_test`, password [`PASSWORD`]), md5 on TCP for role `crond_md5` ([`MD5_PASSWORD`]),
//! a cleartext password for role `crond_clear` ([`CLEAR_PASSWORD`]), on the socket too.
//!
//! [`PgServer::start_tls`] adds TLS: a CA, a server certificate for `localhost` and
//! `127.0.0.1` and a client certificate for role `crond_cert` (pg_hba `cert` over TLS), made
//! with the `openssl` command ([`Certs`]); the server also listens on 127.0.0.2, an address its
//! certificate does not name, and logs connections.
//!
//! [`PgServer::start_standby_of`] makes a streaming standby of a running server with
//! `pg_basebackup -R` (its own directory, socket and port); [`PgServer::promote`] makes it a
//! primary, and [`PgServer::replicate_synchronously`] makes the primary wait for it at commit.

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// The password of the role `crond_test` (SCRAM-SHA-256 over TCP).
pub const PASSWORD: &str = "secret-pw";
/// The password of the role `crond_md5` (md5 over TCP).
pub const MD5_PASSWORD: &str = "md5-pw";
/// The password of the role `crond_clear` (pg_hba `password`: sent in clear text if answered).
pub const CLEAR_PASSWORD: &str = "clear-pw-do-not-send";

const MISSING: &str = "PostgreSQL is missing: run .ci/deps (Debian package postgresql)";

/// A running private server; dropping it stops it (immediate mode) and removes its files.
pub struct PgServer {
    /// Removed when dropped, after the server is stopped.
    dir: tempfile::TempDir,
    bin: PathBuf,
    data: PathBuf,
    socket_dir: PathBuf,
    port: u16,
    as_root: bool,
    certs: Option<Certs>,
}

/// The fixture's certificates (PEM), made with the `openssl` command for one server.
#[derive(Debug, Clone)]
pub struct Certs {
    /// The CA that signed the server's and the client's certificates.
    pub ca: PathBuf,
    /// Another CA, which signed nothing here.
    pub other_ca: PathBuf,
    /// The client certificate (CN `crond_cert`) and its key: a file of the test's user, 0600.
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
}

impl Certs {
    /// Makes the CAs and the server's certificate in `dir`, the client's in `client_dir`.
    fn make(dir: &Path, client_dir: &Path) -> Certs {
        fs::create_dir_all(dir).expect("create the certificates' directory");
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        for ca in ["ca", "other_ca"] {
            run(Command::new("openssl")
                .args(["req", "-x509"])
                .args(ec)
                .arg("-keyout")
                .arg(dir.join(format!("{ca}.key")))
                .arg("-out")
                .arg(dir.join(format!("{ca}.crt")))
                .args(["-days", "2", "-subj", &format!("/CN=crond test {ca}")])
                .args(["-addext", "basicConstraints=critical,CA:TRUE"])
                .args(["-addext", "keyUsage=critical,keyCertSign,cRLSign"]));
        }
        let sign = |name: &str, subject: &str, san: Option<&str>, out_dir: &Path| {
            let key = out_dir.join(format!("{name}.key"));
            let csr = dir.join(format!("{name}.csr"));
            let cert = out_dir.join(format!("{name}.crt"));
            run(Command::new("openssl")
                .args(["req", "-new"])
                .args(ec)
                .arg("-keyout")
                .arg(&key)
                .arg("-out")
                .arg(&csr)
                .args(["-subj", subject]));
            let ext = dir.join(format!("{name}.ext"));
            let mut text = String::from("basicConstraints=CA:FALSE\n");
            if let Some(san) = san {
                text.push_str(&format!("subjectAltName={san}\n"));
            }
            fs::write(&ext, text).expect("write the extensions");
            run(Command::new("openssl")
                .args(["x509", "-req", "-days", "2", "-CAcreateserial"])
                .arg("-in")
                .arg(&csr)
                .arg("-CA")
                .arg(dir.join("ca.crt"))
                .arg("-CAkey")
                .arg(dir.join("ca.key"))
                .arg("-out")
                .arg(&cert)
                .arg("-extfile")
                .arg(&ext));
            fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).expect("chmod key");
            (cert, key)
        };
        let (server_cert, server_key) = sign(
            "server",
            "/CN=localhost",
            Some("DNS:localhost,IP:127.0.0.1"),
            dir,
        );
        fs::create_dir_all(client_dir).expect("create the client's directory");
        let (client_cert, client_key) = sign("client", "/CN=crond_cert", None, client_dir);
        Certs {
            ca: dir.join("ca.crt"),
            other_ca: dir.join("other_ca.crt"),
            client_cert,
            client_key,
            server_cert,
            server_key,
        }
    }
}

impl PgServer {
    /// initdb, configure, start with `pg_ctl -w`, create the roles and the database `crond`.
    pub fn start() -> PgServer {
        PgServer::start_with(false)
    }

    /// As [`PgServer::start`], with TLS (`ssl = on`) and the fixture's certificates.
    pub fn start_tls() -> PgServer {
        PgServer::start_with(true)
    }

    fn start_with(tls: bool) -> PgServer {
        let (dir, socket_dir) = new_dirs();
        // The server's files become the server's below; the client's stay the test's.
        let certs = tls.then(|| Certs::make(&dir.path().join("tls"), &dir.path().join("client")));
        let as_root = super::root::is_root();
        if as_root {
            run(Command::new("chown")
                .arg("-R")
                .arg("postgres:postgres")
                .arg(dir.path()));
            if tls {
                run(Command::new("chown")
                    .arg("-R")
                    .arg("root:root")
                    .arg(dir.path().join("client")));
            }
        }
        let port = free_port();
        let server = PgServer {
            data: dir.path().join("data"),
            dir,
            bin: bin_dir(),
            socket_dir,
            port,
            as_root,
            certs,
        };
        server.init();
        server.start_again();
        server.psql_in(
            "postgres",
            &format!(
                "CREATE ROLE crond_test LOGIN PASSWORD '{PASSWORD}';\n\
                 CREATE ROLE crond_clear LOGIN PASSWORD '{CLEAR_PASSWORD}';\n\
                 CREATE ROLE crond_cert LOGIN;\n\
                 SET password_encryption = 'md5';\n\
                 CREATE ROLE crond_md5 LOGIN PASSWORD '{MD5_PASSWORD}';"
            ),
        );
        // Not with the rest: psql -c runs its statements as one transaction.
        server.psql_in("postgres", "CREATE DATABASE crond OWNER crond_test");
        server
    }

    /// A hot standby of `primary`, streaming from it (`pg_basebackup -R -X stream` over the
    /// primary's socket), with its own directory, socket and port; started and accepting
    /// read-only connections.
    pub fn start_standby_of(primary: &PgServer) -> PgServer {
        let (dir, socket_dir) = new_dirs();
        if primary.as_root {
            run(Command::new("chown")
                .arg("-R")
                .arg("postgres:postgres")
                .arg(dir.path()));
        }
        let port = free_port();
        let standby = PgServer {
            data: dir.path().join("data"),
            dir,
            bin: primary.bin.clone(),
            socket_dir,
            port,
            as_root: primary.as_root,
            certs: None,
        };
        let mut backup = standby.tool("pg_basebackup");
        backup
            .arg("-D")
            .arg(&standby.data)
            .args(["-R", "-X", "stream", "--checkpoint=fast", "--no-sync"])
            .args(["-U", "postgres", "-h"])
            .arg(&primary.socket_dir)
            .args(["-p", &primary.port.to_string()]);
        run(&mut backup);
        // The copied configuration names the primary's port and socket: the later lines win.
        standby.append_conf(&format!(
            "\n# the standby's own\nport = {port}\nunix_socket_directories = '{}'\n\
             listen_addresses = ''\n",
            standby.socket_dir.display()
        ));
        standby.write_passfile();
        standby.start_again();
        standby
    }

    /// Promotes a standby to a primary (`pg_ctl promote -w`: it accepts writes on return).
    pub fn promote(&self) {
        let mut pg_ctl = self.tool("pg_ctl");
        pg_ctl.arg("-D").arg(&self.data).args(["-w", "promote"]);
        run(&mut pg_ctl);
    }

    /// Makes every commit wait until a standby has flushed it (`synchronous_standby_names =
    /// '*'`, `synchronous_commit = on`), once a standby streams; waits for that.
    pub fn replicate_synchronously(&self) {
        self.psql_in(
            "postgres",
            "ALTER SYSTEM SET synchronous_standby_names = '*'",
        );
        self.psql_in("postgres", "ALTER SYSTEM SET synchronous_commit = on");
        self.psql_in("postgres", "SELECT pg_reload_conf()");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let sync = self.psql_in(
                "postgres",
                "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync' \
                 AND state = 'streaming'",
            );
            if sync.trim() != "0" {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no synchronous standby within 30 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Makes every commit durable before it is acknowledged (`synchronous_commit = on`, the
    /// server's default; the fixture turns it off for speed).
    pub fn commit_durably(&self) {
        self.psql_in("postgres", "ALTER SYSTEM SET synchronous_commit = on");
        self.psql_in("postgres", "SELECT pg_reload_conf()");
    }

    fn append_conf(&self, conf: &str) {
        let conf_path = self.data.join("postgresql.conf");
        let mut text = fs::read_to_string(&conf_path).expect("read postgresql.conf");
        text.push_str(conf);
        fs::write(&conf_path, text).expect("write postgresql.conf");
    }

    fn write_passfile(&self) {
        let port = self.port;
        fs::write(
            self.passfile(),
            format!(
                "# the fixture's roles\n\
                 *:{port}:*:crond_test:{PASSWORD}\n\
                 *:{port}:*:crond_md5:{MD5_PASSWORD}\n\
                 *:{port}:*:crond_clear:{CLEAR_PASSWORD}\n"
            ),
        )
        .expect("write the passfile");
        fs::set_permissions(self.passfile(), fs::Permissions::from_mode(0o600))
            .expect("chmod the passfile");
    }

    /// initdb and the fixture's configuration (pg_hba: trust on the socket, replication
    /// included; the passwords above over TCP).
    fn init(&self) {
        let server = self;
        let port = self.port;
        let mut initdb = server.tool("initdb");
        initdb.arg("-D").arg(&server.data).args([
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ]);
        run(&mut initdb);
        fs::write(
            server.data.join("pg_hba.conf"),
            "local all crond_clear password\n\
             local all all trust\n\
             local replication all trust\n\
             hostssl all crond_cert 127.0.0.0/8 cert\n\
             host all crond_md5 127.0.0.0/8 md5\n\
             host all crond_clear 127.0.0.0/8 password\n\
             host all all 127.0.0.0/8 scram-sha-256\n",
        )
        .expect("write pg_hba.conf");
        let tls_conf = match &server.certs {
            Some(c) => format!(
                "ssl = on\n\
                 ssl_cert_file = '{}'\n\
                 ssl_key_file = '{}'\n\
                 ssl_ca_file = '{}'\n\
                 log_connections = on\n\
                 listen_addresses = '127.0.0.1,127.0.0.2'\n",
                c.server_cert.display(),
                c.server_key.display(),
                c.ca.display()
            ),
            None => String::new(),
        };
        server.append_conf(&format!(
            "\n# crond's test fixture\n\
             listen_addresses = '127.0.0.1'\n\
             port = {port}\n\
             unix_socket_directories = '{}'\n\
             fsync = off\n\
             synchronous_commit = off\n\
             full_page_writes = off\n\
             shared_buffers = 16MB\n\
             max_connections = 20\n\
             {tls_conf}",
            server.socket_dir.display()
        ));
        server.write_passfile();
    }

    /// The certificates of a server started with [`PgServer::start_tls`].
    pub fn certs(&self) -> &Certs {
        self.certs
            .as_ref()
            .expect("a server started with start_tls")
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// The directory holding the server's socket (`.s.PGSQL.<port>`), mode 0755.
    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    /// The TCP port on 127.0.0.1, also the number in the socket's name.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A password file with the TCP roles' passwords (`crond_test`, `crond_md5`).
    pub fn passfile(&self) -> PathBuf {
        self.dir.path().join("pgpass")
    }

    /// The connection string for the socket, as the superuser `postgres` (trust).
    pub fn conninfo(&self) -> String {
        format!(
            "host={} port={} dbname=crond user=postgres",
            self.socket_dir.display(),
            self.port
        )
    }

    /// The connection string for TCP as `crond_test` (SCRAM-SHA-256), naming the passfile.
    pub fn tcp_conninfo(&self) -> String {
        format!(
            "host=127.0.0.1 port={} dbname=crond user=crond_test passfile={}",
            self.port,
            self.passfile().display()
        )
    }

    /// Stops the server at once (`pg_ctl stop -m immediate`); its files stay.
    pub fn stop(&self) {
        let mut pg_ctl = self.tool("pg_ctl");
        pg_ctl
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "stop"]);
        run(&mut pg_ctl);
    }

    /// Starts the server (again) on the same directory and port, waiting until it accepts
    /// connections.
    pub fn start_again(&self) {
        let mut pg_ctl = self.tool("pg_ctl");
        pg_ctl
            .arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(self.log_path())
            .args(["-w", "-t", "60", "start"]);
        let out = pg_ctl.output().expect("run pg_ctl start");
        if !out.status.success() {
            panic!(
                "pg_ctl start failed: {}{}\nserver log:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                fs::read_to_string(self.log_path()).unwrap_or_default()
            );
        }
    }

    /// Runs `sql` with `psql -At` over the socket as `postgres` in the database `crond`; returns
    /// its standard output and panics if psql fails.
    pub fn psql(&self, sql: &str) -> String {
        self.psql_in("crond", sql)
    }

    fn psql_in(&self, db: &str, sql: &str) -> String {
        let mut psql = self.tool("psql");
        psql.args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-U", "postgres", "-h"])
            .arg(&self.socket_dir)
            .arg("-p")
            .arg(self.port.to_string())
            .args(["-d", db, "-c", sql]);
        let out = run(&mut psql);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Starts `psql -c sql` without waiting for it (a transaction that holds a lock a while).
    pub fn psql_background(&self, sql: &str) -> std::process::Child {
        let mut psql = self.tool("psql");
        psql.args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-U", "postgres", "-h"])
            .arg(&self.socket_dir)
            .arg("-p")
            .arg(self.port.to_string())
            .args(["-d", "crond", "-c", sql])
            .stdout(std::process::Stdio::null());
        psql.spawn().expect("start psql")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// A command for one of the server's programs, as `postgres` when we are root.
    fn tool(&self, name: &str) -> Command {
        let program = self.bin.join(name);
        let mut cmd = if self.as_root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        // The test's working directory may be closed to `postgres`.
        cmd.current_dir(self.dir.path()).env("LC_ALL", "C");
        cmd
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let mut pg_ctl = self.tool("pg_ctl");
        pg_ctl
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "stop"]);
        // Already stopped by the test, or never started: nothing to do.
        let _ = pg_ctl.output();
    }
}

/// A fresh directory under /tmp for one server (mode 0755) and its socket directory in it.
fn new_dirs() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("crond-pg-")
        .tempdir_in("/tmp")
        .expect("create the server's directory");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755))
        .expect("chmod the server's directory");
    let socket_dir = dir.path().join("socket");
    fs::create_dir(&socket_dir).expect("create the socket directory");
    fs::set_permissions(&socket_dir, fs::Permissions::from_mode(0o755))
        .expect("chmod the socket directory");
    (dir, socket_dir)
}

/// The newest installed PostgreSQL's bin directory.
fn bin_dir() -> PathBuf {
    let versions = fs::read_dir("/usr/lib/postgresql").expect(MISSING);
    let newest = versions
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .max_by_key(|(version, _)| *version);
    match newest {
        Some((_, bin)) => bin,
        None => panic!("{MISSING}"),
    }
}

/// A port free on 127.0.0.1 now (the kernel's choice for port 0), never one already handed to
/// another server of this test binary (whose postmaster may not be listening yet).
fn free_port() -> u16 {
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
        let port = listener.local_addr().expect("the bound address").port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// Runs a command and panics with its output if it fails.
fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
