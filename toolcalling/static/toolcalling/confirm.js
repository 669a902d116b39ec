// Confirm / Decline for the calls a user decides themselves (@tool(approver="user")), with the call's
// preview; chat.js puts them in its waiting box. The words come from the page's catalog: the JSON the
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
      ["approve", words.confirm, words.confirmed, "tc-confirm-yes"],
      ["reject", words.decline, words.declined, "tc-secondary"],
    ];
    const buttons = choices.map(([verb, text, done, className]) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = className;
      button.textContent = text;
      button.setAttribute("aria-label", `${text}: ${name}`);
      button.addEventListener("click", () => {
        for (const other of buttons) other.disabled = true;
        chat
          .json("POST", `${chat.root.dataset.toolCalls}${call.id}/${verb}/`, {})
          .then(() => chat.notice(done))
          .catch((error) => {
            chat.notice(error.message, true);
            for (const other of buttons) other.disabled = false;
          });
      });
      return button;
    });
    box.append(...buttons);
    return box;
  }

  window.toolcallingConfirm = { texts, fill, controls };
})();
