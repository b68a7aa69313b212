import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Where share URLs lead (`<public URL>/share/<shortGUID>`): a page telling the person who
/// followed one to open it in the app. The same page for every GUID, live or not (R16: a URL
/// reveals nothing by itself).
enum SharePage {
    @Sendable static func answer(_ request: Request, context: ServerRequestContext) -> Response {
        let guid = (context.parameters.get("guid") ?? "").filter { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }.prefix(64)
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        let page = """
            <!doctype html><html><head><meta charset="utf-8"><title>Shared with you</title></head>
            <body><h1>Someone shared something with you</h1>
            <p>Open this link in the app that shared it, signed in as the person it was sent to.
            An app resolves it with <code>records/resolve</code> and the short GUID <code>\(guid)</code>.</p></body></html>
            """
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: page)))
    }
}
