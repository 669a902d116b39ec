// Reading server-sent events from a fetch() response: EventSource cannot POST or send headers.
// Sites building their own chat UI can use it too: window.toolcallingReadEvents(response, onEvent, onId).
"use strict";

(function () {
  // Calls onEvent({id, type, data}) per event and onId(id) for an "id:" line without data, which
  // tells where the stream starts. Resolves when the server closes the stream.
  async function readEvents(response, onEvent, onId) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let fields = {};
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, end).replace(/\r$/, "");
        buffer = buffer.slice(end + 1);
        if (line === "") {
          if (fields.data !== undefined) {
            onEvent({ id: Number(fields.id), type: fields.event || "message", data: JSON.parse(fields.data) });
          } else if (fields.id !== undefined) {
            onId(Number(fields.id));
          }
          fields = {};
        } else if (!line.startsWith(":")) {
          const colon = line.indexOf(":");
          const name = colon < 0 ? line : line.slice(0, colon);
          const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          fields[name] = name === "data" && fields.data !== undefined ? `${fields.data}\n${text}` : text;
        }
      }
    }
  }

  window.toolcallingReadEvents = readEvents;
})();
