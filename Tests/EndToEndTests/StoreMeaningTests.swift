import Foundation
import ShareFlowTestKit
import XCTest

/// `store check` checks what the store means, not only its types (issue 39 §7): on
/// PostgreSQL a trigger, function, view, rule or row policy planted in schema `shareflow` is a
/// problem (one made every invitee an administrator while every table and column was right)
/// and `store copy` refuses such a target; on both stores a damaged change-token key and a
/// zone whose log starts past its counter are problems (every token would be refused); and a
/// store path that is a FIFO is refused at once (it hung `store info` and `serve`).
final class StoreMeaningTests: XCTestCase {
    private var dir: URL!

    override func setUpWithError() throws {
        dir = try CLI.temporaryDirectory()
    }

    private func setUp(_ store: String) throws {
        let script = dir.appendingPathComponent("setup.lua")
        try CLI.write(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = "alice@example.com" }
            sf.accounts.create{ email = "bob@example.com" }
            local c = sf.as("alice@example.com"):container("iCloud.test")
            local zone = c.privateCloudDatabase:saveZone("Trips")
            local r = sf.Record{ recordType = "Trip", recordName = "lisbon", zone = zone }
            local s = sf.Share{ rootRecord = r }
            s:addParticipant(c:fetchShareParticipants{ "bob@example.com" }[1])
            assert(c.privateCloudDatabase:modifyRecords{ save = { r, s } })
            """,
            to: script
        )
        let r = try CLI.run(["run", "--store", store, script.path])
        XCTAssertEqual(r.status, 0, r.stderr)
    }

    private func check(_ store: String) throws -> CLI.Result {
        try CLI.run(["store", "check", "--store", store])
    }

    func testPlantedObjectsInThePostgreSQLSchemaAreProblemsAndNoCopyTarget() throws {
        guard let cluster = ProcessInfo.processInfo.environment["SHAREFLOW_TEST_CLUSTER"], !cluster.isEmpty else {
            throw XCTSkip("no PostgreSQL cluster (SHAREFLOW_TEST_CLUSTER)")
        }
        let admin = cluster.replacingOccurrences(of: #"/[^/]+$"#, with: "/postgres", options: .regularExpression)
        func database() throws -> String {
            let name = "meaning_" + UUID().uuidString.prefix(8).lowercased()
            XCTAssertEqual(try CLI.runTool("psql", [admin, "-qc", "CREATE DATABASE \(name)"]).status, 0)
            return cluster.replacingOccurrences(of: #"/[^/]+$"#, with: "/\(name)", options: .regularExpression)
        }
        let store = try database()
        try setUp(store)
        let clean = try check(store)
        XCTAssertEqual(clean.status, 0, clean.stdout)
        let planted = try CLI.runTool(
            "psql",
            [
                store, "-qc",
                """
                CREATE FUNCTION shareflow.promote() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.permission := 'readWrite'; RETURN NEW; END $$;
                CREATE TRIGGER promote BEFORE INSERT ON shareflow.participant FOR EACH ROW EXECUTE FUNCTION shareflow.promote();
                CREATE VIEW shareflow.everyone AS SELECT * FROM shareflow.account;
                CREATE RULE quiet AS ON DELETE TO shareflow.record DO INSTEAD NOTHING;
                """,
            ]
        )
        XCTAssertEqual(planted.status, 0, planted.stderr)
        let r = try check(store)
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        for expected in [
            "trigger promote on table participant was not made by ShareFlow",
            "function promote in schema shareflow was not made by ShareFlow",
            "view everyone in schema shareflow was not made by ShareFlow",
            "rule quiet on table record was not made by ShareFlow",
        ] {
            XCTAssertTrue(r.stdout.contains(expected), "\(expected) in \(r.stdout)")
        }
        XCTAssertFalse(r.stdout.contains("participant_changes_share"), "ShareFlow's own triggers are not listed: \(r.stdout)")
        // Subtler (attack pass): ShareFlow's own function replaced in place, keeping its name;
        // a CHECK constraint and a column default calling a function of another schema.
        let subtle = try database()
        try setUp(subtle)
        let replaced = try CLI.runTool(
            "psql",
            [
                subtle, "-qc",
                """
                CREATE OR REPLACE FUNCTION shareflow.participant_changes_share() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN UPDATE shareflow.participant SET role = 'administrator' WHERE id = NEW.id AND role <> 'owner'; RETURN NULL; END $$;
                CREATE FUNCTION public.looks_harmless(bigint) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
                ALTER TABLE shareflow.participant ADD CONSTRAINT harmless CHECK (public.looks_harmless(shareID));
                CREATE FUNCTION public.stamp() RETURNS double precision LANGUAGE sql AS $$ SELECT 0::double precision $$;
                ALTER TABLE shareflow.record ALTER COLUMN modifiedAt SET DEFAULT public.stamp();
                """,
            ]
        )
        XCTAssertEqual(replaced.status, 0, replaced.stderr)
        let subtleCheck = try check(subtle)
        XCTAssertEqual(subtleCheck.status, 1, subtleCheck.stdout)
        for expected in [
            "function participant_changes_share in schema shareflow is not as ShareFlow made it",
            "a constraint on table participant calls public.looks_harmless, which ShareFlow did not make",
            "a column default on table record calls public.stamp, which ShareFlow did not make",
        ] {
            XCTAssertTrue(subtleCheck.stdout.contains(expected), "\(expected) in \(subtleCheck.stdout)")
        }
        // A copy into a database whose schema holds such objects is refused, naming them.
        let target = try database()
        XCTAssertEqual(
            try CLI.runTool(
                "psql",
                [
                    target, "-qc",
                    """
                    CREATE SCHEMA shareflow;
                    CREATE FUNCTION shareflow.promote() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
                    """,
                ]
            ).status,
            0
        )
        let source = dir.appendingPathComponent("source.sqlite").path
        try setUp(source)
        let copy = try CLI.run(["store", "copy", source, target])
        XCTAssertNotEqual(copy.status, 0, copy.stdout)
        XCTAssertTrue(copy.stderr.contains("function promote in schema shareflow was not made by ShareFlow"), copy.stderr)
    }

    func testADamagedTokenKeyAndALogStartingPastItsCounterAreProblems() throws {
        let store = dir.appendingPathComponent("store.sqlite").path
        try setUp(store)
        XCTAssertEqual(try check(store).status, 0)
        XCTAssertEqual(try Tools.sqlite(store, "UPDATE shareflow_meta SET value = 'not a key' WHERE key = 'syncKey'"), 0)
        XCTAssertEqual(try Tools.sqlite(store, "UPDATE zone SET keptFrom = changeSeq + 10 WHERE name = 'Trips'"), 0)
        let r = try check(store)
        XCTAssertEqual(r.status, 1, r.stdout)
        XCTAssertTrue(r.stdout.contains("change tokens' key"), r.stdout)
        XCTAssertTrue(
            r.stdout.contains("zone Trips") && r.stdout.contains("past its counter") && r.stdout.contains("every token of it would be refused"),
            r.stdout
        )
    }

    func testAStorePathThatIsAFIFOIsRefusedAtOnce() throws {
        let fifo = dir.appendingPathComponent("store.fifo").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        for command in [["store", "info"], ["store", "check"], ["serve", "--port", "0"]] {
            let started = Date()
            let r = try CLI.run(command + ["--store", fifo], timeout: 30)
            XCTAssertNotEqual(r.status, 0, "\(command)")
            XCTAssertTrue(r.stderr.contains("cannot open store \(fifo): it is a FIFO (named pipe), not a store file"), "\(command): \(r.stderr)")
            XCTAssertLessThan(Date().timeIntervalSince(started), 10, "\(command)")
        }
        let folder = try CLI.run(["store", "info", "--store", dir.path])
        XCTAssertTrue(folder.stderr.contains("it is a folder"), folder.stderr)
    }
}
