// The live feed: server-sent events saying when what the console reads changed. The page says
// when it lost the feed (the console is gone, or cannot read Kafka) and reconnects by itself.

const SILENT_MS = 6000; // the feed pings every 2 s: this long without a word, it is lost

export function follow(onChange, onStatus) {
  let source = null;
  let heard = Date.now();
  let version = null;

  function lost(why) {
    version = null; // whatever comes after is news
    onStatus({ live: false, why });
  }

  function open() {
    source?.close();
    source = new EventSource("/api/feed");
    source.addEventListener("open", () => {
      heard = Date.now();
    });
    source.addEventListener("ping", () => {
      heard = Date.now();
    });
    source.addEventListener("state", (message) => {
      heard = Date.now();
      const state = JSON.parse(message.data);
      if (state.problem) lost(state.problem);
      else onStatus({ live: true });
      if (state.version !== version) {
        version = state.version;
        onChange(version);
      }
    });
    source.addEventListener("error", () => {
      lost("feed lost: the console does not answer; reconnecting…");
      if (source.readyState === EventSource.CLOSED) setTimeout(open, 1000);
    });
  }

  setInterval(() => {
    if (Date.now() - heard > SILENT_MS) {
      lost("feed lost: nothing heard from the console; reconnecting…");
      heard = Date.now();
      open();
    }
  }, 1000);
  open();
}
