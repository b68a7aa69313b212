import Foundation
import ShareFlowTestKit
import XCTest

/// `serve --tls-cert/--tls-key` (SPEC §19 A1): https with a certificate from a CA the test
/// makes and trusts explicitly; share URLs say https; a certificate that cannot serve is one
/// line at start, naming the file.
final class ServeTLSTests: ServerTestCase {
    private var ca = "", cert = "", key = ""

    /// A test CA and a leaf for localhost and 127.0.0.1 signed by it (WEB-SERVICES.md §3).
    private func makeCertificates() throws {
        let d = dir.path
        func openssl(_ arguments: [String]) throws {
            let r = try CLI.runTool("openssl", arguments)
            XCTAssertEqual(r.status, 0, r.stderr)
        }
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "\(d)/ca.key", "-out",
            "\(d)/ca.pem", "-days", "2", "-subj", "/CN=ShareFlow Test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ])
        try openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "\(d)/leaf.key", "-out", "\(d)/leaf.csr",
            "-subj", "/CN=localhost",
        ])
        try CLI.write(
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n",
            to: dir.appendingPathComponent("ext.cnf")
        )
        try openssl([
            "x509", "-req", "-in", "\(d)/leaf.csr", "-CA", "\(d)/ca.pem", "-CAkey", "\(d)/ca.key", "-CAcreateserial", "-out", "\(d)/leaf.pem",
            "-days", "2",
            "-extfile", "\(d)/ext.cnf",
        ])
        (ca, cert, key) = ("\(d)/ca.pem", "\(d)/leaf.pem", "\(d)/leaf.key")
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        stopServer()
        try makeCertificates()
        try startServer(["--tls-cert", cert, "--tls-key", key])
        curlOptions = ["--cacert", ca]
    }

    func testHTTPSWithTheTestCAAndItsURLsSayHTTPS() throws {
        XCTAssertTrue(base.hasPrefix("https://127.0.0.1:"), base)
        var r = try call("GET", "/healthz", query: "")
        XCTAssertEqual(r.0, 200, "\(r.1)")
        // Without the test CA, curl refuses the certificate (and so would any client).
        curlOptions = []
        r = try call("GET", "/healthz", query: "")
        XCTAssertEqual(r.0, 0, "an untrusted certificate was accepted")
        curlOptions = ["--cacert", ca]
        // Plain http to the https port gets no answer.
        let plain = try Tools.curl("GET", base.replacingOccurrences(of: "https://", with: "http://") + "/healthz", in: dir)
        XCTAssertNotEqual(plain.0, 200)

        // The sign-in URL a client is sent to (AUTHENTICATION_REQUIRED's redirectURL) is made
        // from the server's public URL: https and this server.
        r = try call("GET", db + "/private/users/current", query: "ckAPIToken=\(api)")
        let redirect = try XCTUnwrap(r.1["redirectURL"] as? String, "\(r.1)")
        XCTAssertTrue(redirect.hasPrefix(base + "/signin"), redirect)
        let page = try Tools.curl("GET", redirect, options: ["--cacert", ca], in: dir)
        XCTAssertEqual(page.0, 200, "\(page.1)")
    }

    /// pyicloud's sharing flow, strict, over https (WEB-SERVICES.md §3: requests trusts the test
    /// CA through `REQUESTS_CA_BUNDLE`, which overrides any session's `verify`).
    func testPyiCloudSharesOverHTTPSInStrictMode() throws {
        guard hasPyiCloud() else { return }
        try runOverHTTPSWithCarol("sharing_flow.py", saying: "pyicloud sharing flow ok\n")
        // Without the CA, requests refuses the server's certificate.
        let (refused, said) = try runPyiCloud(
            "sharing_flow.py",
            ["SHAREFLOW_CAROL": "x", "REQUESTS_CA_BUNDLE": "", "CURL_CA_BUNDLE": ""],
            timeout: 120
        )
        XCTAssertNotEqual(refused, 0)
        XCTAssertTrue(said.contains("CERTIFICATE_VERIFY_FAILED") || said.contains("SSLError"), said)
    }

    /// pyicloud's assets (SPEC §19 A6), strict, over https: upload, save, lookup, download
    /// byte-exact and by ranges; a participant downloads, a stranger cannot; receipts once.
    func testPyiCloudUploadsAndDownloadsAssetsOverHTTPSInStrictMode() throws {
        guard hasPyiCloud() else { return }
        try runOverHTTPSWithCarol("asset_flow.py", saying: "pyicloud asset flow ok\n")
        // The blob is beside the store, named by its SHA-256.
        let blobs = try FileManager.default.subpathsOfDirectory(atPath: store + ".assets").filter { $0.count == 67 }
        XCTAssertEqual(blobs.count, 1, "\(blobs)")
    }

    /// Runs Tests/pyicloud/`script` against this https server, trusting the test CA, with
    /// Carol made for it; it must end saying `saying`.
    private func runOverHTTPSWithCarol(_ script: String, saying: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try self.script("require('shareflow').accounts.create{ email = 'carol@example.com' }")
        let (status, text) = try runPyiCloud(
            script,
            ["SHAREFLOW_CAROL": try token("carol@example.com"), "REQUESTS_CA_BUNDLE": ca, "CURL_CA_BUNDLE": ca],
            timeout: 120
        )
        XCTAssertEqual(status, 0, text, file: file, line: line)
        XCTAssertTrue(text.hasSuffix(saying), text, file: file, line: line)
    }

    /// A TLS connection that never says anything is closed by the header deadline, like a
    /// plain one (its handshake holds no connection slot for ever).
    func testASilentTLSConnectionIsClosed() throws {
        stopServer()
        let config = dir.appendingPathComponent("deadlines.lua")
        try CLI.write("return { server = { headerSeconds = 1 } }", to: config)
        try startServer(["--tls-cert", cert, "--tls-key", key, "--config", config.path])
        let port = try XCTUnwrap(Int(base.split(separator: ":").last ?? ""))
        // Python's socket and ssl: one connection silent before the handshake, one silent after.
        let probe = """
            import os, socket, ssl, sys, time
            def closed(sock):
                # Until the TCP connection ends (not only TLS's close_notify): the socket and
                # its place under the connection cap are what the deadline gives back.
                raw = socket.socket(fileno=os.dup(sock.fileno()))
                raw.settimeout(20)
                start = time.time()
                try:
                    while raw.recv(1024): pass
                except (ConnectionError, OSError):
                    pass
                return time.time() - start
            raw = socket.create_connection(("127.0.0.1", \(port)))
            before = closed(raw)
            context = ssl.create_default_context(cafile="\(ca)")
            tls = context.wrap_socket(socket.create_connection(("127.0.0.1", \(port))), server_hostname="localhost")
            after = closed(tls)
            print(f"{before:.1f} {after:.1f}")
            """
        let r = try CLI.runTool("python3", ["-c", probe], timeout: 90)
        XCTAssertEqual(r.status, 0, r.stderr)
        let seconds = r.stdout.split(separator: " ").compactMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        XCTAssertEqual(seconds.count, 2, r.stdout)
        // The deadline is 1 s; swift-nio-ssl's default wait for the client's close_notify would
        // have kept the socket 5 s more (stop 57's attack).
        for s in seconds { XCTAssertLessThan(s, 4.5, "a silent connection was closed by the header deadline (1 s): \(r.stdout)") }
    }

    /// What cannot serve is said at start, one line naming the file, exit 1; nothing listens.
    func testACertificateThatCannotServeIsOneLineAtStart() throws {
        stopServer()
        let other = dir.appendingPathComponent("other.key").path
        XCTAssertEqual(
            try CLI.runTool("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", other]).status,
            0
        )
        let encrypted = dir.appendingPathComponent("encrypted.key").path
        XCTAssertEqual(try CLI.runTool("openssl", ["pkey", "-in", key, "-aes256", "-passout", "pass:secret", "-out", encrypted]).status, 0)
        let notPEM = dir.appendingPathComponent("not.pem").path
        try CLI.write("hello\n", to: URL(fileURLWithPath: notPEM))
        let cases: [([String], String)] = [
            (["--tls-cert", cert, "--tls-key", other], "is not the private key of --tls-cert \(cert)"),
            (["--tls-cert", dir.appendingPathComponent("missing.pem").path, "--tls-key", key], "missing.pem (No such file or directory)"),
            (["--tls-cert", "/dev/zero", "--tls-key", key], "--tls-cert /dev/zero is larger than 1 MiB"),
            (["--tls-cert", cert, "--tls-key", encrypted], "--tls-key \(encrypted): the key is encrypted with a passphrase"),
            (["--tls-cert", notPEM, "--tls-key", key], "--tls-cert \(notPEM)"),
            (["--tls-cert", cert, "--tls-key", notPEM], "--tls-key \(notPEM): not a PEM private key"),
            (["--tls-cert", cert], "--tls-cert and --tls-key go together"),
        ]
        for (arguments, expected) in cases {
            let r = try CLI.run(["serve", "--store", store, "--port", "0"] + arguments)
            XCTAssertNotEqual(r.status, 0, "\(arguments)")
            let first = r.stderr.split(separator: "\n").first.map(String.init) ?? ""
            XCTAssertTrue(first.contains(expected), "\(arguments): \(r.stderr)")
            XCTAssertFalse(r.stdout.contains("listening"), "\(arguments)")
        }
    }
}
