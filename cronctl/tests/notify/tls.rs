//! An HTTPS server on loopback with a certificate for 127.0.0.1 signed by a CA made here
//! (written to `ca.pem` in the given directory).

use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use openssl::asn1::Asn1Time;
use openssl::bn::BigNum;
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::ssl::{SslAcceptor, SslMethod};
use openssl::x509::extension::{BasicConstraints, SubjectAlternativeName};
use openssl::x509::{X509, X509NameBuilder};

fn key() -> PKey<Private> {
    PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap()
}

fn certificate(cn: &str, key: &PKey<Private>, issuer: Option<(&X509, &PKey<Private>)>) -> X509 {
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", cn).unwrap();
    let name = name.build();
    let mut b = X509::builder().unwrap();
    b.set_version(2).unwrap();
    b.set_serial_number(
        &BigNum::from_u32(if issuer.is_some() { 2 } else { 1 })
            .unwrap()
            .to_asn1_integer()
            .unwrap(),
    )
    .unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_pubkey(key).unwrap();
    b.set_not_before(&Asn1Time::days_from_now(0).unwrap())
        .unwrap();
    b.set_not_after(&Asn1Time::days_from_now(2).unwrap())
        .unwrap();
    match issuer {
        None => {
            b.set_issuer_name(&name).unwrap();
            b.append_extension(BasicConstraints::new().critical().ca().build().unwrap())
                .unwrap();
            b.sign(key, MessageDigest::sha256()).unwrap();
        }
        Some((ca, ca_key)) => {
            b.set_issuer_name(ca.subject_name()).unwrap();
            let san = SubjectAlternativeName::new()
                .ip("127.0.0.1")
                .build(&b.x509v3_context(Some(ca), None))
                .unwrap();
            b.append_extension(san).unwrap();
            b.sign(ca_key, MessageDigest::sha256()).unwrap();
        }
    }
    b.build()
}

/// Serves every connection with 200; returns the port and the paths asked for.
pub fn serve(dir: &Path) -> (u16, Arc<Mutex<Vec<String>>>) {
    let ca_key = key();
    let ca = certificate("crond test CA", &ca_key, None);
    std::fs::write(dir.join("ca.pem"), ca.to_pem().unwrap()).unwrap();
    let leaf_key = key();
    let leaf = certificate("127.0.0.1", &leaf_key, Some((&ca, &ca_key)));
    let mut acceptor = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls_server()).unwrap();
    acceptor.set_private_key(&leaf_key).unwrap();
    acceptor.set_certificate(&leaf).unwrap();
    let acceptor = Arc::new(acceptor.build());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (acceptor, kept) = (acceptor.clone(), kept.clone());
            std::thread::spawn(move || {
                let Ok(mut tls) = acceptor.accept(stream) else {
                    return;
                };
                if let Some(request) = super::read_request(&mut tls) {
                    kept.lock().unwrap().push(request.path);
                }
                super::respond(&mut tls, 200);
            });
        }
    });
    (port, seen)
}
