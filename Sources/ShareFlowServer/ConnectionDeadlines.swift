import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTPTypes

/// How long a connection may take at each stage (SPEC §13, wave 3): a client that opens a
/// connection and sends nothing, stops in the middle of a body, or keeps an idle keep-alive
/// connection, holds a descriptor for a bounded time only.
public struct ConnectionDeadlines: Sendable {
    /// From the connection opening to its first request's head (a header sent slowly counts).
    public var headerSeconds: Double = 10
    /// From a request's head to the end of its body: the body's whole time, so a body that
    /// stops arriving, or trickles, ends there.
    public var bodySeconds: Double = 30
    /// From a response's end to the next request's head on a keep-alive connection.
    public var idleSeconds: Double = 60

    public init() {}
}

/// Closes the connection when a deadline of `ConnectionDeadlines` passes. Sits after the
/// HTTP codec, so it sees request heads and ends, and the responses going out.
final class ConnectionDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let deadlines: ConnectionDeadlines
    private var timer: Scheduled<Void>?
    /// Requests whose response has not ended (a pipelined client may send several).
    private var open = 0

    init(_ deadlines: ConnectionDeadlines) { self.deadlines = deadlines }

    private func arm(_ seconds: Double, _ context: ChannelHandlerContext) {
        timer?.cancel()
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: .nanoseconds(Int64(seconds * 1e9))) {
            loopBound.value.close(promise: nil)
        }
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(deadlines.headerSeconds, context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(deadlines.headerSeconds, context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { disarm() }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            open += 1
            arm(deadlines.bodySeconds, context)
        case .body:
            break
        case .end:
            // The request is in; the time it takes to answer is the server's, not the client's.
            disarm()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            open -= 1
            if open <= 0 {
                open = 0
                arm(deadlines.idleSeconds, context)
            }
        }
        context.write(data, promise: promise)
    }
}
