import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// The pieces made faster for `shareflow bench` keep their meaning: identifiers stay random
/// version-4 UUIDs, stored names read back exactly, and observers can change the observer
/// list while an event is being delivered.
class HotPathTests: XCTestCase {
    func testUUIDStringsAreVersion4AndDistinct() {
        let pattern = try! NSRegularExpression(pattern: "^[0-9A-F]{8}-[0-9A-F]{4}-4[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}$")
        var seen = Set<String>()
        // More than one 4 KiB pool refill (256 IDs each).
        for _ in 0..<2_000 {
            let id = RandomIdentifier.uuidString()
            XCTAssertEqual(pattern.numberOfMatches(in: id, range: NSRange(id.startIndex..., in: id)), 1, id)
            seen.insert(id)
            XCTAssertNotNil(UUID(uuidString: id), id)
        }
        XCTAssertEqual(seen.count, 2_000)
    }

    func testRandomBytesAreNotConstant() {
        let a = RandomIdentifier.bytes(24)
        let b = RandomIdentifier.bytes(24)
        XCTAssertEqual(a.count, 24)
        XCTAssertNotEqual(a, b)
        XCTAssertEqual(RandomIdentifier.bytes(5).count, 5)
        XCTAssertEqual(RandomIdentifier.bytes(0).count, 0)
    }

    /// A token this process sealed lately is opened from memory (`ChangeTokenKeys`), with the
    /// key it was sealed with only: under another store's key the same string is opened as any
    /// other and refused; one forgotten (past the capacity) is opened by its seal again.
    func testASealedTokenIsKnownOnlyWithItsOwnKey() throws {
        let key = Array(RandomIdentifier.bytes(32))
        let other = Array(RandomIdentifier.bytes(32))
        func token(_ seq: Int64) -> ChangeToken {
            ChangeToken(kind: .zone, environment: .development, scope: .shared, target: 7, viewer: 9, seq: seq, floor: 0, zoneSeq: 0)
        }
        let first = token(1).encoded(key: key)
        XCTAssertEqual(ChangeTokenKeys.shared.known(first, key: key), token(1))
        XCTAssertEqual(try ChangeToken.decode(first, key: key, kind: .zone), token(1))
        XCTAssertNil(ChangeTokenKeys.shared.known(first, key: other))
        XCTAssertThrowsError(try ChangeToken.decode(first, key: other, kind: .zone)) { error in
            XCTAssertTrue("\(error)".contains("not one ShareFlow gave"), "\(error)")
        }
        XCTAssertThrowsError(try ChangeToken.decode(first, key: key, kind: .database), "a zone's token is not a database's, known or not")
        for seq in 2...Int64(ChangeTokenKeys.capacity + 10) { _ = token(seq).encoded(key: key) }
        XCTAssertNil(ChangeTokenKeys.shared.known(first, key: key), "forgotten past the capacity")
        XCTAssertEqual(try ChangeToken.decode(first, key: key, kind: .zone), token(1), "and opened by its seal")
        XCTAssertEqual(token(1).encoded(key: key), first, "the same position, the same string")
    }

    /// A share's participants come in the order they were added, whatever their accounts'
    /// order: the store reads them along an index by account and sorts them by row.
    func testParticipantsComeInTheOrderTheyWereAdded() throws {
        let w = try World()
        let people = try (0..<6).map { n in try w.engine.accounts.create(emails: ["p\(n)@example.com"]).emails[0] }
        let added = [people[4], people[1], people[5], "carol@example.com", people[0], "bob@example.com", people[3], people[2]]
        let share = try w.share(added)
        let expected = ["alice@example.com"] + added
        func emails(_ share: Share) -> [String?] { share.participants.map { $0.userIdentity.lookupInfo?.emailAddress } }
        let fetched = try XCTUnwrap(try w.c.privateCloudDatabase.fetchRecord(share.recordID) as? Share)
        XCTAssertEqual(emails(fetched), expected)
        // A participant sees the accepted ones (R37): all accept, in another order.
        for who in added.reversed() { try w.accept(share.url!, in: try w.engine.session(for: who).container(World.containerID)) }
        XCTAssertEqual(emails(try w.accept(share.url!, in: w.bc)), expected)
        let metadata = try w.cc.fetchShareMetadataResults([share.url!]).0[0].1.get()
        XCTAssertEqual(emails(metadata.share), expected)
    }

    func testStoredNamesReadBackAsJSONDecoderReadsThem() throws {
        let names = [
            NameComponents(),
            NameComponents(givenName: "Bob"),
            NameComponents(namePrefix: "Dr", givenName: "Zoë", middleName: "Ann", familyName: "Ō'Brien", nameSuffix: "Jr", nickname: "Z"),
            NameComponents(givenName: "Quote \" and backslash \\"),
            NameComponents(givenName: "Slash/and\nnewline\ttab"),
            NameComponents(familyName: "😀 emoji \u{0} nul"),
        ]
        for name in names {
            let json = String(decoding: try JSONEncoder().encode(name), as: UTF8.self)
            XCTAssertEqual(NameComponents(storedJSON: json), name, json)
        }
        // Written by hand or by another tool: spaces, unknown keys, non-string values.
        XCTAssertEqual(
            NameComponents(storedJSON: #" { "givenName" : "Ann" , "familyName":"Lee" } "#),
            NameComponents(givenName: "Ann", familyName: "Lee")
        )
        XCTAssertEqual(NameComponents(storedJSON: #"{"givenName":"Ann","extra":"x"}"#), NameComponents(givenName: "Ann"))
        XCTAssertEqual(NameComponents(storedJSON: #"{"givenName":null}"#), NameComponents())
        XCTAssertEqual(NameComponents(storedJSON: "not json"), NameComponents())
        XCTAssertEqual(NameComponents(storedJSON: #"{"givenName":"Ann""#), NameComponents())
        // Each key is read by its bytes: one letter off, the flat reader leaves it to the
        // decoder (which drops an unknown key), never to another part.
        for key in ["namePrefix", "givenName", "middleName", "familyName", "nameSuffix", "nickname"] {
            XCTAssertNotNil(NameComponents(flatJSON: "{\"\(key)\":\"x\"}"), key)
            for at in key.indices {
                var near = key
                near.replaceSubrange(at...at, with: "_")
                XCTAssertNil(NameComponents(flatJSON: "{\"\(near)\":\"x\"}"), near)
                XCTAssertEqual(NameComponents(storedJSON: "{\"\(near)\":\"x\"}"), NameComponents(), near)
            }
        }
        XCTAssertNil(NameComponents(flatJSON: #"{"nameXrefix":"x"}"#))
        XCTAssertNil(NameComponents(flatJSON: #"{"":"x"}"#))
    }

    func testFetchedParticipantCarriesTheStoredName() throws {
        let w = try World()
        let p = try w.participant("bob@example.com")
        XCTAssertEqual(p.userIdentity.nameComponents?.givenName, "Bob")
        XCTAssertEqual(p.userIdentity.userRecordID, w.bob.userRecordID)
        // Carol is not discoverable: no name.
        XCTAssertNil(try w.participant("carol@example.com").userIdentity.nameComponents)
        XCTAssertNotEqual(p.participantID, try w.participant("bob@example.com").participantID)
    }

    func testObserversChangingTheListDuringDeliveryDoNotDisturbIt() throws {
        let engine = try Engine(store: Store(path: ":memory:"))
        let alice = try engine.accounts.create(emails: ["alice@example.com"])
        var calls: [String] = []
        var second: EventBus.Handle?
        let first = engine.events.observe(.operationFinished, priority: 10, label: "first") { _ in
            calls.append("first")
            second?.remove()  // removes a later observer of the same event mid-delivery
            engine.events.observe(.operationFinished, label: "added") { _ in calls.append("added") }
        }
        second = engine.events.observe(.operationFinished, label: "second") { _ in calls.append("second") }
        engine.publish(Event(.operationFinished, caller: alice, container: nil))
        // The delivery under way saw the list as it was when it started.
        XCTAssertEqual(calls, ["first", "second"])
        calls = []
        first.remove()
        engine.publish(Event(.operationFinished, caller: alice, container: nil))
        XCTAssertEqual(calls, ["added"])
    }

    func testAcceptPolicyMakesTheShareOnlyWhenReadAndSeesItAsItWasBefore() throws {
        let w = try World()
        let share = try w.share(["bob@example.com", "carol@example.com"])
        var seen: [ParticipantAcceptanceStatus?] = []
        var requests: [PolicyRequest] = []
        w.engine.policies.add(.shareAccept, name: "look") { request in
            requests.append(request)
            if requests.count == 1 { seen.append(try request.participant?.acceptanceStatus) }
            return .allow
        }
        _ = try w.accept(share.url!, in: w.bc)
        _ = try w.accept(share.url!, in: w.cc)
        // Read during the decision: the state before this accept.
        XCTAssertEqual(seen, [.pending])
        // Read after it (the second request was never read during its decision): still there.
        XCTAssertEqual(try requests[1].participant?.userIdentity.lookupInfo, .emailAddress("carol@example.com"))
        XCTAssertEqual(try requests[1].share?.url, share.url)
        XCTAssertEqual(requests[1].metadata?.share.url, share.url)
    }
}
