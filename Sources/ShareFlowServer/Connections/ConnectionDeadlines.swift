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
    /// An asset upload's body (SPEC §19 A3) may take `bodySeconds` more than its bytes take at
    /// this rate (its `Content-Length`, else `uploadMaxBytes`): a slow honest client finishes,
    /// a trickle still ends.
    public var uploadBytesPerSecond: Double = 65536
    /// The most bytes an upload's body holds (`assets.maxBytes`).
    public var uploadMaxBytes: Int64 = 15 << 20

    /// The time a request's body may take.
    func bodySeconds(for head: HTTPRequest) -> Double {
        guard head.path?.hasPrefix("/assets/1/upload/") == true else { return bodySeconds }
        let declared = head.headerFields[.contentLength].flatMap { Int64($0) }.map { min($0, uploadMaxBytes) }
        return bodySeconds + Double(declared ?? uploadMaxBytes) / max(uploadBytesPerSecond, 1)
    }

    public init() {}
}

/// Closes the connection when a deadline of `ConnectionDeadlines` passes. Sits after the
/// HTTP codec, so it sees request heads and ends, and the responses going out.
///
/// Two clocks: the request's (from the connection opening to its first head, then from each
/// head to its end) and the connection's progress (`idleSeconds` without a request part read,
/// a write handed down or the socket draining). A client that stops reading — even one
/// with pipelined requests still queued — makes no progress and is closed; a slow reader of a
/// big answer keeps draining the socket and is not. The server's own time is never the
/// client's stall: while a request read whole waits for its answer and the socket takes
/// writes, the idle clock does not run (under load a slow answer was cut at 0 bytes).
final class ConnectionDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let deadlines: ConnectionDeadlines
    private var requestTimer: Scheduled<Void>?
    private var stallTimer: Scheduled<Void>?
    private var lastProgress = NIODeadline.now()
    private let idle: TimeAmount
    /// Until the channel goes inactive or the handler leaves it: no timer is armed after.
    private var live = true
    /// Requests whose head was read and whose answer has not ended yet (more than one when
    /// pipelined). A body still arriving is the request timer's (`bodySeconds`).
    private var answering = 0
    /// Each address's share of the connections, and the address this one holds a place for.
    private let addresses: ConnectionsByAddress?
    private var admitted: String?

    init(_ deadlines: ConnectionDeadlines, addresses: ConnectionsByAddress? = nil) {
        self.deadlines = deadlines
        self.addresses = addresses
        idle = .nanoseconds(Int64(deadlines.idleSeconds * 1e9))
    }

    /// Takes the connection's place in its address's share, or closes it at once (the client
    /// holds its share already: the kernel's backlog is for other addresses).
    private func admit(_ context: ChannelHandlerContext) -> Bool {
        guard let addresses, admitted == nil, let address = context.channel.remoteAddress?.ipAddress else { return true }
        guard addresses.admit(address) else {
            context.close(promise: nil)
            return false
        }
        admitted = address
        return true
    }

    private func schedule(_ seconds: Double, _ context: ChannelHandlerContext) -> Scheduled<Void> {
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        return context.eventLoop.scheduleTask(in: .nanoseconds(Int64(seconds * 1e9))) {
            loopBound.value.close(promise: nil)
        }
    }

    private func armRequest(_ seconds: Double, _ context: ChannelHandlerContext) {
        guard live else { return }
        requestTimer?.cancel()
        requestTimer = schedule(seconds, context)
    }

    /// The connection made progress: it may stay `idleSeconds` more. Only a time is noted;
    /// the one stall timer checks it when it fires (no timer churn per request part).
    private func progressed(_ context: ChannelHandlerContext) {
        guard live else { return }
        lastProgress = .now()
        if stallTimer == nil { armStall(at: lastProgress + idle, context) }
    }

    private func armStall(at deadline: NIODeadline, _ context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        stallTimer = context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.stallTimer = nil
            guard handler.live else { return }
            // Answering, into a socket that takes what is written: the server's time.
            if handler.answering > 0 && context.channel.isWritable { handler.lastProgress = .now() }
            let due = handler.lastProgress + handler.idle
            if due <= .now() { context.close(promise: nil) } else { handler.armStall(at: due, context) }
        }
    }

    private func disarm() {
        if let admitted, let addresses { addresses.release(admitted) }
        admitted = nil
        live = false
        requestTimer?.cancel()
        requestTimer = nil
        stallTimer?.cancel()
        stallTimer = nil
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive {
            guard admit(context) else { return }
            armRequest(deadlines.headerSeconds, context)
            progressed(context)
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        guard admit(context) else { return context.fireChannelActive() }
        armRequest(deadlines.headerSeconds, context)
        progressed(context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { disarm() }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        progressed(context)
        switch unwrapInboundIn(data) {
        case .head(let head):
            armRequest(deadlines.bodySeconds(for: head), context)
            answering += 1
        case .body:
            break
        case .end:
            // The request is in; the time it takes to answer is the server's, not the client's.
            requestTimer?.cancel()
            requestTimer = nil
        }
        context.fireChannelRead(data)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { progressed(context) }
        context.fireChannelWritabilityChanged()
    }

    /// A write is handed down only while the socket takes what came before (the server's
    /// writer waits for writability), so handing one down is progress too.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        progressed(context)
        if case .end = unwrapOutboundIn(data) { answering = max(0, answering - 1) }
        context.write(data, promise: promise)
    }
}
