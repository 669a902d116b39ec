// The chat of {% toolcalling_chat %}: plain JavaScript, no build step.
// Text from the server is only ever set with textContent, never parsed as HTML.
"use strict";

(function () {
  const STREAM = "text/event-stream";
  const readEvents = window.toolcallingReadEvents; // from sse.js, loaded first
  const confirm = window.toolcallingConfirm; // from confirm.js: the user's own Confirm / Decline

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  const label = (status) => String(status || "").replace(/_/g, " ");
  // "cancel order (order no: 20251120-0007)": the history has the user's own arguments; events never do.
  const describeCall = (call) => {
    const shown = Object.entries(call.arguments || {}).filter(([, value]) => value !== null && value !== "");
    if (!shown.length) return label(call.name);
    const text = (value) => (typeof value === "object" ? JSON.stringify(value) : String(value));
    return `${label(call.name)} (${shown.map(([key, value]) => `${label(key)}: ${text(value)}`).join(", ")})`;
  };

  class Chat {
    constructor(root) {
      this.root = root;
      this.api = root.dataset.api;
      this.assistant = root.dataset.assistant;
      this.texts = confirm.texts(root);
      const $ = (selector) => root.querySelector(selector);
      this.els = {
        list: $(".tc-list"),
        messages: $(".tc-messages"),
        activity: $(".tc-activity"),
        waiting: $(".tc-waiting"),
        waitingTitle: $(".tc-waiting-title"),
        withdraw: $(".tc-withdraw"),
        waitingText: $(".tc-waiting-text"),
        waitingCalls: $(".tc-waiting-calls"),
        form: $(".tc-composer"),
        input: $(".tc-composer textarea"),
        send: $(".tc-send"),
        notice: $(".tc-notice"),
      };
      this.current = null; // the open conversation's id
      this.status = "idle";
      this.lastSeq = null; // the last event applied; events arrive on two streams and apply once
      this.sending = false;
      this.follower = null; // AbortController of the events stream
      this.draft = null; // the assistant bubble that deltas are streaming into
      this.stopRequested = false; // Stop was pressed; the turn ends at its next step
      this.sendLabel = this.els.send.textContent;
      this.wire();
    }

    // HTTP -----------------------------------------------------------------------------------------

    csrfToken() {
      const field = this.root.querySelector("input[name=csrfmiddlewaretoken]");
      if (field) return field.value;
      const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
      return match ? decodeURIComponent(match[1]) : "";
    }

    async request(method, url, body, accept = "application/json", signal = undefined) {
      const headers = { Accept: accept };
      if (method !== "GET") headers["X-CSRFToken"] = this.csrfToken();
      if (body !== undefined) headers["Content-Type"] = "application/json";
      const response = await fetch(url, {
        method,
        headers,
        credentials: "same-origin",
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
      if (response.ok) return response;
      const data = await response.json().catch(() => null);
      throw new Error((data && (data.detail || JSON.stringify(data))) || `The server answered ${response.status}.`);
    }

    async json(method, url, body) {
      const response = await this.request(method, url, body);
      return response.status === 204 ? null : response.json();
    }

    url = (id, rest = "") => `${this.api}${id}/${rest}`;

    // Conversations --------------------------------------------------------------------------------

    async loadConversations() {
      const data = await this.json("GET", this.api);
      const items = (Array.isArray(data) ? data : data.results || []).filter((c) => c.assistant === this.assistant);
      this.els.list.replaceChildren();
      for (const conversation of items) {
        const button = el("button", "tc-conversation", conversation.title || "New conversation");
        button.type = "button";
        button.dataset.id = conversation.id;
        button.setAttribute("aria-current", String(conversation.id === this.current));
        button.addEventListener("click", () => this.select(conversation.id));
        const item = el("li");
        item.append(button);
        this.els.list.append(item);
      }
      return items;
    }

    async create() {
      const conversation = await this.json("POST", this.api, { assistant: this.assistant });
      await this.select(conversation.id);
      await this.loadConversations();
      return conversation;
    }

    async select(id) {
      this.stopFollowing();
      this.current = id;
      this.lastSeq = null;
      this.draft = null;
      this.notice("");
      this.activity("");
      for (const button of this.els.list.querySelectorAll("button")) {
        button.setAttribute("aria-current", String(button.dataset.id === id));
      }
      // Subscribe first, then load the history: nothing that happens in between is missed, and
      // what arrives twice is recognised by its message id.
      await this.follow(id);
      await this.reload();
    }

    // History --------------------------------------------------------------------------------------

    async reload() {
      const id = this.current;
      const [conversation, messages] = await Promise.all([
        this.json("GET", this.url(id)),
        this.json("GET", this.url(id, "messages/")),
      ]);
      if (id !== this.current) return;
      this.draft = null;
      this.els.messages.replaceChildren();
      for (const message of messages) this.addMessage(message);
      this.setStatus(conversation.status, messages);
      if (conversation.status === "failed" && conversation.error) this.notice(conversation.error, true);
    }

    addMessage(message) {
      // Tool results reach the customer through the assistant's answer; tool messages are not shown.
      if (message.role !== "user" && message.role !== "assistant") return null;
      if (message.id && this.els.messages.querySelector(`[data-id="${message.id}"]`)) return null;
      const calls = message.tool_calls || [];
      if (message.role === "assistant" && !message.content && !calls.length) return null;
      const item = el("li", `tc-message tc-${message.role}`);
      if (message.id) item.dataset.id = message.id;
      item.append(el("span", "tc-who", message.role === "user" ? "You: " : "Assistant: "));
      item.append(el("span", "tc-text", message.content || ""));
      if (calls.length) {
        const list = el("ul", "tc-calls");
        list.setAttribute("aria-label", "Tools used");
        for (const call of calls) list.append(this.renderCall(call));
        item.append(list);
      }
      this.els.messages.append(item);
      item.scrollIntoView({ block: "nearest" });
      return item;
    }

    renderCall(call) {
      const item = el("li", "tc-call");
      item.dataset.callId = call.id;
      item.append(el("code", null, call.name), " ");
      item.append(el("span", `tc-badge tc-status-${call.status}`, label(call.status)));
      return item;
    }

    updateCall(call) {
      const badge = this.els.messages.querySelector(`[data-call-id="${call.id}"] .tc-badge`);
      if (badge) {
        badge.className = `tc-badge tc-status-${call.status}`;
        badge.textContent = label(call.status);
      }
    }

    // Events ---------------------------------------------------------------------------------------

    apply(conversation, event) {
      if (conversation !== this.current) return;
      if (this.lastSeq !== null && event.id <= this.lastSeq) return;
      this.lastSeq = event.id;
      const data = event.data;
      switch (event.type) {
        case "delta":
          if (!this.draft) {
            // Screen readers wait for the stored message that replaces this bubble (aria-busy).
            this.draft = el("li", "tc-message tc-assistant tc-streaming");
            this.draft.setAttribute("aria-busy", "true");
            this.draft.append(el("span", "tc-who", "Assistant: "), el("span", "tc-text", ""));
            this.els.messages.append(this.draft);
          }
          this.draft.querySelector(".tc-text").textContent += data.content;
          break;
        case "message":
          if (data.role === "assistant" && this.draft) {
            this.draft.remove(); // replaced by the stored message, which is what was streamed
            this.draft = null;
          }
          if (data.role === "user") {
            const pending = this.els.messages.querySelector(".tc-pending");
            if (pending) {
              pending.classList.remove("tc-pending");
              pending.dataset.id = data.id;
              break;
            }
          }
          this.addMessage(data);
          break;
        case "tool_call_started":
          this.activity(`Using ${data.name}…`);
          this.updateCall(data);
          break;
        case "tool_call_finished":
          this.activity(`${data.name}: ${label(data.status)}`);
          this.updateCall(data);
          break;
        case "tool_call":
          this.updateCall(data);
          break;
        case "awaiting_approval":
          this.showWaiting(data.tool_calls.filter((c) => c.status === "awaiting_approval"));
          break;
        case "tool_call_decided":
          // A decision can arrive after the run it started has finished; only a waiting call changes.
          if (this.els.messages.querySelector(`[data-call-id="${data.id}"] .tc-status-awaiting_approval`)) {
            this.updateCall(data);
          }
          if (!this.els.waiting.hidden) {
            const texts = this.texts;
            this.els.waitingText.textContent =
              data.status === "approved"
                ? data.approver === "user" ? texts.approvedByUser : texts.approvedByStaff
                : confirm.fill(texts.decided, { name: data.name, status: label(data.status) });
          }
          break;
        case "error":
          this.notice(data.detail, true);
          break;
        case "turn_end":
          this.activity(data.stopped ? this.els.send.dataset.stopped || "Stopped." : "");
          this.stopRequested = false;
          this.draft = null;
          this.reload().catch((error) => this.notice(error.message, true));
          this.loadConversations().catch(() => {});
          break;
      }
    }

    async follow(id) {
      // Long-lived GET of the conversation's events; the server closes it when idle and it is
      // reopened from the last event seen, so staff decisions show up without polling.
      const controller = new AbortController();
      this.follower = controller;
      let opened;
      const ready = new Promise((resolve) => (opened = resolve));
      (async () => {
        let failures = 0;
        while (!controller.signal.aborted) {
          try {
            const after = this.lastSeq === null ? "" : `?after=${this.lastSeq}`;
            const response = await this.request("GET", this.url(id, `events/${after}`), undefined, STREAM, controller.signal);
            failures = 0;
            await readEvents(
              response,
              (event) => this.apply(id, event),
              (start) => {
                if (id === this.current) this.lastSeq = start; // where the server starts: ours, or a reset stream's
                opened();
              },
            );
          } catch (error) {
            if (controller.signal.aborted) return;
            opened();
            failures += 1;
            await new Promise((resolve) => setTimeout(resolve, Math.min(30000, 1000 * 2 ** failures)));
          }
        }
      })();
      await ready;
    }

    stopFollowing() {
      if (this.follower) this.follower.abort();
      this.follower = null;
    }

    // Sending --------------------------------------------------------------------------------------

    async send(content) {
      this.setSending(true);
      this.notice("");
      try {
        if (!this.current) await this.create();
        const id = this.current;
        const mine = this.addMessage({ role: "user", content });
        if (mine) mine.classList.add("tc-pending");
        this.els.input.value = "";
        this.activity("Thinking…");
        const response = await this.request("POST", this.url(id, "messages/"), { content }, STREAM);
        await readEvents(
          response,
          (event) => this.apply(id, event),
          (start) => {
            if (this.lastSeq === null) this.lastSeq = start;
          },
        );
      } catch (error) {
        this.notice(error.message, true);
        this.activity("");
        if (this.current) await this.reload().catch(() => {});
      } finally {
        this.setSending(false);
        this.els.input.focus();
      }
    }

    // State shown ----------------------------------------------------------------------------------

    setStatus(status, messages) {
      this.status = status;
      const waiting = [];
      for (const message of messages || []) {
        for (const call of message.tool_calls || []) if (call.status === "awaiting_approval") waiting.push(call);
      }
      if (status === "awaiting_approval") this.showWaiting(waiting);
      else this.els.waiting.hidden = true;
      this.setSending(this.sending);
    }

    showWaiting(calls) {
      this.status = "awaiting_approval";
      const mine = calls.length > 0 && calls.every((call) => call.approver === "user");
      this.els.waitingTitle.textContent = mine ? this.texts.waitingUser : this.texts.waitingStaff;
      this.els.waitingText.textContent = mine ? this.texts.userText : this.texts.staffText;
      this.els.withdraw.hidden = mine; // Decline answers the model; withdrawing is for calls staff decide
      this.els.waitingCalls.replaceChildren(
        ...calls.map((call) => {
          const item = el("li", null, describeCall(call));
          if (call.approver === "user") item.append(confirm.controls(this, call, describeCall(call)));
          return item;
        }),
      );
      this.els.waiting.hidden = false;
      this.setSending(this.sending);
    }

    setSending(value) {
      this.sending = value;
      // While a turn runs the button stops it; a conversation waiting for approval refuses messages (409).
      const running = this.running();
      this.els.send.textContent = running ? this.els.send.dataset.stopLabel || "Stop" : this.sendLabel;
      this.els.send.classList.toggle("tc-stop", running);
      this.els.send.formNoValidate = running; // Stop works with an empty message box
      this.els.send.disabled = running ? this.stopRequested : this.status === "awaiting_approval";
      this.els.input.setAttribute("aria-busy", String(value));
    }

    // Stop -----------------------------------------------------------------------------------------

    running = () => this.sending || this.status === "running";

    async stop() {
      this.stopRequested = true;
      this.setSending(this.sending);
      this.activity(this.els.send.dataset.stopping || "Stopping…");
      try {
        await this.json("POST", this.url(this.current, "stop/"));
      } catch (error) {
        this.stopRequested = false; // 409: it had ended already; the reload shows how
        this.notice(error.message, true);
        await this.reload().catch(() => {});
      }
      this.setSending(this.sending);
    }

    notice(text, isError = false) {
      this.els.notice.textContent = text || "";
      this.els.notice.classList.toggle("tc-error", Boolean(isError));
    }

    activity = (text) => (this.els.activity.textContent = text || "");

    // Wiring ---------------------------------------------------------------------------------------

    wire() {
      this.els.form.addEventListener("submit", (event) => {
        event.preventDefault();
        if (this.running()) {
          // Only the button stops a turn; Enter while it runs does nothing.
          if (event.submitter === this.els.send && !this.stopRequested) this.stop();
          return;
        }
        const content = this.els.input.value.trim();
        if (content && !this.els.send.disabled) this.send(content);
      });
      this.els.input.addEventListener("keydown", (event) => {
        if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
          event.preventDefault();
          this.els.form.requestSubmit();
        }
      });
      this.root.querySelector(".tc-new").addEventListener("click", () => {
        this.create()
          .then(() => this.els.input.focus())
          .catch((error) => this.notice(error.message, true));
      });
      this.root.querySelector(".tc-withdraw").addEventListener("click", () => {
        this.json("POST", this.url(this.current, "cancel/"))
          .then(() => this.notice("The request was withdrawn."))
          .then(() => this.reload())
          .catch((error) => this.notice(error.message, true));
      });
      for (const example of this.root.querySelectorAll(".tc-example")) {
        example.addEventListener("click", () => {
          this.els.input.value = example.textContent;
          this.els.input.focus();
        });
      }
    }

    async start() {
      try {
        const items = await this.loadConversations();
        const wanted = items.find((c) => `#${c.id}` === location.hash) || items[0];
        if (wanted) await this.select(wanted.id);
      } catch (error) {
        this.notice(error.message, true);
      }
    }
  }

  function boot() {
    for (const root of document.querySelectorAll(".tc-chat[data-api]")) {
      if (root.querySelector(".tc-composer") && !root.toolcallingChat) {
        root.toolcallingChat = new Chat(root);
        root.toolcallingChat.start();
      }
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
