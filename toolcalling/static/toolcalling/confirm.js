// Confirm / Decline for the calls a user decides themselves (@tool(approver="user")), with the call's
// preview, and for such a call whose process stopped while it ran (outcome_unknown) the user's say on what
// happened: it happened, run it again, it did not happen; chat.js puts them in its waiting box. The words come from the page's catalog: the JSON the
// template tag renders (translated on the server), named by the chat's data-texts attribute.
"use strict";

(function () {
  const texts = (root) => {
    const node = document.getElementById(root.dataset.texts || "");
    return node ? JSON.parse(node.textContent) : {};
  };
  // "%(name)s was %(status)s." with {name, status}: the catalog keeps Python's placeholders.
  const fill = (text, values) => String(text || "").replace(/%\((\w+)\)s/g, (_, key) => String(values[key] ?? ""));

  function previewText(preview, words) {
    if (preview.error) return fill(words.previewFailed, { error: preview.error });
    const show = (value) => (typeof value === "object" && value !== null ? JSON.stringify(value) : String(value));
    const value = preview.value;
    if (value && typeof value === "object" && !Array.isArray(value)) {
      return Object.entries(value).map(([key, item]) => `${key}: ${show(item)}`).join("\n");
    }
    return show(value);
  }

  // chat: the page's Chat (its json(), notice(), texts and root); name: how the call is described.
  function controls(chat, call, name) {
    const words = chat.texts;
    const box = document.createElement("div");
    box.className = "tc-confirm";
    if (call.preview) {
      const preview = document.createElement("p");
      preview.className = "tc-preview";
      preview.textContent = previewText(call.preview, words);
      box.append(preview);
    }
    const choices = [
      ["approve/", () => ({}), words.confirm, words.confirmed, "tc-confirm-yes"],
      ["reject/", () => ({}), words.decline, words.declined, "tc-secondary"],
    ];
    box.append(...buttons(chat, call, name, choices));
    return box;
  }

  // The buttons of one call: each posts its body to the call's URL + path, once, and says it was done.
  // choices: [path, body(), text, done, className].
  function buttons(chat, call, name, choices) {
    const words = chat.texts;
    const all = choices.map(([path, body, text, done, className]) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = className;
      button.textContent = text;
      button.setAttribute("aria-label", fill(words.choiceLabel || "%(choice)s: %(call)s", { choice: text, call: name }));
      button.addEventListener("click", () => {
        for (const other of all) other.disabled = true;
        chat
          .json("POST", `${chat.root.dataset.toolCalls}${call.id}/${path}`, body())
          .then(() => chat.notice(done))
          .catch((error) => {
            chat.notice(error.message, true);
            for (const other of all) other.disabled = false;
          });
      });
      return button;
    });
    return all;
  }

  // A call of the user's whose process stopped while it ran: they say what happened (POST .../settle/),
  // with what they found, which the model is told; running it again uses the call's own idempotency key.
  function settle(chat, call, name) {
    const words = chat.texts;
    const box = document.createElement("div");
    box.className = "tc-confirm tc-settle";
    const note = document.createElement("input");
    note.type = "text";
    note.id = `${chat.root.id}-settle-${call.id}`;
    note.className = "tc-settle-note";
    const label = document.createElement("label");
    label.htmlFor = note.id;
    label.textContent = words.settleNote;
    const said = (outcome) => () => ({ outcome, result: outcome === "retry" ? "" : note.value.trim() });
    const choices = [
      ["settle/", said("succeeded"), words.settleSucceeded, words.settledSucceeded, "tc-confirm-yes"],
      ["settle/", said("retry"), words.settleRetry, words.settledRetry, "tc-secondary"],
      ["settle/", said("failed"), words.settleFailed, words.settledFailed, "tc-secondary"],
    ];
    box.append(label, note, ...buttons(chat, call, name, choices));
    return box;
  }

  window.toolcallingConfirm = { texts, fill, controls, settle };
})();
