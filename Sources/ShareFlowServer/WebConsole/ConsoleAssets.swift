import Hummingbird
import NIOCore

/// The console's own files: its stylesheet and its one script (plain JavaScript, no build
/// step). The pages load nothing else (`PageHeaders.contentSecurityPolicy`).
enum ConsoleAssets {
    static var stylesheet: Response {
        Response(status: .ok, headers: PageHeaders.asset(contentType: "text/css; charset=utf-8"), body: .init(byteBuffer: ByteBuffer(string: css)))
    }

    static var script: Response {
        Response(
            status: .ok,
            headers: PageHeaders.asset(contentType: "text/javascript; charset=utf-8"),
            body: .init(byteBuffer: ByteBuffer(string: javaScript))
        )
    }

    // Colours keep a contrast of at least 4.5:1 against their background (WCAG AA).
    static let css = """
        :root { --ink: #1d1d1f; --muted: #4a4a52; --line: #d2d2d7; --accent: #0050b3; --bad: #a4000f; --good: #0b6b2e; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #fff; }
        header { background: #f5f5f7; border-bottom: 1px solid var(--line); }
        nav { display: flex; gap: 1.2rem; align-items: center; padding: .6rem 1.5rem; flex-wrap: wrap; }
        nav a { color: var(--accent); text-decoration: none; }
        nav a:hover, nav a:focus { text-decoration: underline; }
        nav .brand { font-weight: 600; color: var(--ink); margin-right: 1rem; }
        nav form { margin-left: auto; }
        main { padding: 1rem 1.5rem 3rem; max-width: 72rem; }
        h1 { font-size: 1.5rem; margin: .6rem 0 1rem; }
        h2 { font-size: 1.15rem; margin: 1.6rem 0 .6rem; }
        a { color: var(--accent); }
        table { border-collapse: collapse; width: 100%; margin: .4rem 0 1rem; }
        th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: anywhere; }
        th { font-weight: 600; color: var(--muted); font-size: .85rem; }
        code, pre { font: 13px/1.4 ui-monospace, "SF Mono", Menlo, monospace; }
        pre { background: #f5f5f7; padding: .6rem; overflow: auto; max-height: 24rem; white-space: pre-wrap; overflow-wrap: anywhere; }
        form.inline { display: inline; margin: 0; }
        form.row { display: flex; gap: .5rem; align-items: end; flex-wrap: wrap; margin: .4rem 0 1rem; }
        form.row label, form.grid label { display: flex; flex-direction: column; font-size: .85rem; color: var(--muted); gap: .15rem; }
        form.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(12rem, 1fr)); gap: .6rem; margin: .4rem 0 1rem; }
        form.grid .field { display: flex; flex-direction: column; font-size: .85rem; color: var(--muted); gap: .15rem; }
        form.signin { display: flex; flex-direction: column; gap: .4rem; max-width: 28rem; }
        input, select, button { font: inherit; padding: .3rem .5rem; border: 1px solid #8e8e93; border-radius: 4px; background: #fff; color: var(--ink); }
        button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
        button.quiet { background: #fff; color: var(--accent); }
        button.danger { background: var(--bad); border-color: var(--bad); }
        .acting { background: #eef4ff; border: 1px solid #b6cdf2; padding: .4rem .7rem; border-radius: 4px; }
        .flash { padding: .5rem .8rem; border-radius: 4px; border: 1px solid; }
        .flash p { margin: 0; }
        .flash.good { border-color: var(--good); color: var(--good); background: #f0faf3; }
        .flash.bad { border-color: var(--bad); color: var(--bad); background: #fff5f5; }
        .denial { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: .5rem 0 0; color: var(--ink); }
        .denial dt { font-weight: 600; }
        .denial dd { margin: 0; }
        .hint, .muted { color: var(--muted); font-size: .9rem; }
        main.signin { max-width: 32rem; }
        main.signin form { display: flex; flex-direction: column; gap: .4rem; }
        .error { color: var(--bad); }
        .badge { display: inline-block; font-size: .75rem; padding: 0 .4rem; border-radius: 3px; border: 1px solid var(--muted); color: var(--muted); }
        .badge.deleted, .badge.deny { border-color: var(--bad); color: var(--bad); }
        .badge.allow { border-color: var(--good); color: var(--good); }
        ul.feed { list-style: none; padding: 0; }
        ul.feed li { padding: .3rem 0; border-bottom: 1px solid var(--line); }
        #feed-state { font-size: .85rem; color: var(--muted); }
        details summary { cursor: pointer; }
        """

    /// The live feed (`/console/feed`): an `EventSource` on the same origin (the session's
    /// cookie goes with it); each change a list item made with `textContent`, never markup.
    static let javaScript = """
        "use strict";
        document.addEventListener("DOMContentLoaded", function () {
          var list = document.getElementById("feed");
          if (!list || !list.dataset.source || typeof EventSource === "undefined") { return; }
          var state = document.getElementById("feed-state");
          var source = new EventSource(list.dataset.source);
          source.addEventListener("open", function () { if (state) { state.textContent = "live"; } });
          source.addEventListener("error", function () { if (state) { state.textContent = "reconnecting…"; } });
          source.addEventListener("change", function (event) {
            var change;
            try { change = JSON.parse(event.data); } catch (e) { return; }
            var item = document.createElement("li");
            item.className = change.deleted ? "change deleted" : "change";
            var badge = document.createElement("span");
            badge.className = change.deleted ? "badge deleted" : "badge";
            badge.textContent = change.deleted ? "deleted" : "saved";
            var name = document.createElement("code");
            name.textContent = String(change.recordName);
            var type = document.createElement("span");
            type.className = "muted";
            type.textContent = " " + String(change.recordType || "");
            item.appendChild(badge);
            item.appendChild(document.createTextNode(" "));
            item.appendChild(name);
            item.appendChild(type);
            list.insertBefore(item, list.firstChild);
            while (list.children.length > 200) { list.removeChild(list.lastChild); }
          });
        });
        """
}
