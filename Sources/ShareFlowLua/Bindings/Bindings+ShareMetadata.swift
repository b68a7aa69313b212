import CLua
import Foundation
import ShareFlow

/// `ShareMetadata`: what a share's URL tells the one who opens it (R8).
extension Bindings {
    func defineMetadata() {
        metadataClass
            .property("containerIdentifier") { lua, m in lua.push(string: m.containerIdentifier) }
            .property("environment") { lua, m in lua.push(string: m.environment.rawValue) }
            .property("share") { [unowned self] _, m in push(record: m.share) }
            .property("url") { lua, m in lua.push(string: m.url) }
            .property("ownerIdentity") { [unowned self] _, m in push(m.ownerIdentity) }
            .property("hierarchicalRootRecordID") { [unowned self] _, m in push(m.hierarchicalRootRecordID) }
            .property("rootRecord") { [unowned self] _, m in push(record: m.rootRecord) }
            .property("participantRole") { lua, m in lua.push(string: m.participantRole.rawValue) }
            .property("participantStatus") { lua, m in lua.push(string: m.participantStatus.rawValue) }
            .property("participantPermission") { lua, m in lua.push(string: m.participantPermission.rawValue) }
            .describe { $0.description }
    }
}
