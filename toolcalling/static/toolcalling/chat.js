// The chat of {% toolcalling_chat %}: plain JavaScript, no build step.
// Text from the server is only ever set with textContent, never parsed as HTML.
// Every sentence it shows comes translated from the template tag (chat_texts()), read here with t().
"use strict";

(function () {
  const STREAM = "text/event-stream";
  const readEvents = window.toolcallingReadEvents; // from sse.js, loaded first
  const confirm = window.toolcallingConfirm; // from confirm.js: the user's own Confirm / Decline, and settle
  const attach = window.toolcallingAttach; // from attach.js: files picked, pasted or dropped
  const RECONNECT_MAX_MS = 10000;
  // Turn errors whose detail may quote a tool's exception or the model endpoint: end users get a neutral sentence.
  const TURN_ERRORS = new Set([
    "turn_failed",
    "model_error",
    "model_call_limit_exceeded",
    "tool_call_limit_exceeded",
    "output_validation_failed",
    "tool_error",
  ]);

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const words = (name) => String(name || "").replace(/_/g, " ");
  // "cancel_order" -> "Cancel order", for calls stored before labels existed.
  const humanise = (name) => {
    const text = words(name).replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
    return text.charAt(0).toUpperCase() + text.slice(1);
  };
  const callLabel = (call) => call.label || humanise(call.name);
  // Calls that keep a conversation waiting for a person: a decision, or a say on what happened to a call whose
  // process stopped while it ran.
  const WAITING = new Set(["awaiting_approval", "outcome_unknown"]);

  // A failed request: `message` is a sentence for people; `offline` when the server could not be reached.
  class RequestError extends Error {
    constructor(message, { status = 0, code = "", offline = false } = {}) {
      super(message);
      this.status = status;
      this.code = code;
      this.offline = offline;
    }
  }

  class Chat {
    constructor(root) {
      this.root = root;
      this.api = root.dataset.api;
      this.assistant = root.dataset.assistant;
      this.maxLength = Number(root.dataset.maxLength) || Infinity;
      this.texts = confirm.texts(root);
      const $ = (selector) => root.querySelector(selector);
      this.els = {
        list: $(".tc-list"),
        more: $(".tc-more"),
        messages: $(".tc-messages"),
        activity: $(".tc-activity"),
        waiting: $(".tc-waiting"),
        waitingTitle: $(".tc-waiting-title"),
        waitingText: $(".tc-waiting-text"),
        withdraw: $(".tc-withdraw"),
        waitingCalls: $(".tc-waiting-calls"),
        form: $(".tc-composer"),
        input: $(".tc-composer textarea"),
        send: $(".tc-send"),
        counter: $(".tc-counter"),
        notice: $(".tc-notice"),
        allOrigins: $(".tc-all-origins"),
      };
      this.current = null; // the open conversation's id
      this.status = "idle";
      this.lastSeq = null; // the last event applied; events arrive on two streams and apply once
      this.sending = false;
      this.follower = null; // AbortController of the events stream
      this.draft = null; // the assistant bubble that deltas are streaming into
      this.nextPage = null; // URL of the next page of conversations, when the site paginates
      this.pagesLoaded = 0;
      this.offline = false; // the server could not be reached; a probe runs until it can
      this.stopRequested = false; // Stop was pressed; the turn ends at its next step
      this.sendLabel = this.els.send.textContent;
      // Client tools the template tag registered: {tool name: the page's function that runs it}.
      const registered = root.dataset.clientTools && document.getElementById(root.dataset.clientTools);
      this.clientTools = registered ? JSON.parse(registered.textContent) : {};
      this.runningHere = new Set(); // ids of the client calls this page runs (or ran): each once
      this.tray = root.querySelector(".tc-attach") ? new attach.Tray(this) : null;
      this.wire();
    }

    // "Using %(tool)s…" with {tool: ...}: the catalog keeps Python's placeholders, which translators know.
    t(key, values = {}) {
      return confirm.fill(this.texts[key] || key, values);
    }

    statusText = (status) => this.texts[`status.${status}`] || words(status);

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
      let response;
      try {
        response = await fetch(url, {
          method,
          headers,
          credentials: "same-origin",
          body: body === undefined ? undefined : JSON.stringify(body),
          signal,
        });
      } catch (error) {
        if (signal && signal.aborted) throw error;
        throw new RequestError(this.t("offline"), { offline: true });
      }
      if (response.ok) return response;
      const data = await response.json().catch(() => null);
      throw new RequestError(this.describeError(response.status, data), {
        status: response.status,
        code: (data && data.code) || "",
      });
    }

    // A sentence for an error answer: the server's own for request errors (they are written for users),
    // a neutral one for a failed turn, never the raw body.
    describeError(status, data) {
      const code = data && typeof data.code === "string" ? data.code : "";
      if (TURN_ERRORS.has(code)) return this.t("turnFailed");
      if (data && typeof data.detail === "string" && data.detail) return data.detail;
      if (data && typeof data === "object") {
        // DRF's validation shape: {"content": ["..."]}; its first message is a sentence.
        for (const value of Object.values(data)) {
          const first = Array.isArray(value) ? value[0] : value;
          if (typeof first === "string" && first) return first;
        }
      }
      return this.t(status >= 500 ? "serverError" : "refused", { status });
    }

    async json(method, url, body) {
      const response = await this.request(method, url, body);
      return response.status === 204 ? null : response.json();
    }

    url = (id, rest = "") => `${this.api}${id}/${rest}`;

    // Showing an error: a lost connection is watched until the server answers again.
    fail(error, { unsent = false } = {}) {
      if (error && error.offline) this.connectionLost(unsent);
      else this.notice(error && error.message ? error.message : String(error), true);
    }

    // Connection -----------------------------------------------------------------------------------

    connectionLost(unsent) {
      this.notice(this.t(unsent ? "offlineUnsent" : "offline"), true);
      if (this.offline) return;
      this.offline = true;
      this.probe();
    }

    async probe() {
      for (let delay = 1000; this.offline; delay = Math.min(RECONNECT_MAX_MS, delay * 2)) {
        await sleep(delay);
        try {
          await this.request("GET", this.listUrl());
          this.connectionBack();
        } catch (error) {
          if (!error.offline) this.connectionBack(); // an answer, even an error, means the server is back
        }
      }
    }

    connectionBack() {
      if (!this.offline) return;
      this.offline = false;
      this.notice("");
      this.refreshConversations().catch((error) => this.fail(error));
      if (this.current) {
        // The events stream may be waiting out a back-off: follow again at once, then catch up.
        this.stopFollowing();
        this.follow(this.current).then(() => this.reload()).catch((error) => this.fail(error));
      }
    }

    // Conversations --------------------------------------------------------------------------------

    // Chat conversations only, unless the visitor asks for those begun by code or an MCP client too.
    listUrl = () =>
      `${this.api}?assistant=${encodeURIComponent(this.assistant)}` +
      (this.els.allOrigins && this.els.allOrigins.checked ? "" : "&origin=chat");

    // One page of the site's pagination (or the whole list when it does not paginate).
    async fetchConversations(url) {
      const data = await this.json("GET", url);
      const items = Array.isArray(data) ? data : data.results || [];
      return { items: items.filter((c) => c.assistant === this.assistant), next: (!Array.isArray(data) && data.next) || null };
    }

    async loadConversations() {
      const page = await this.fetchConversations(this.listUrl());
      this.els.list.replaceChildren();
      this.pagesLoaded = 1;
      this.showConversations(page);
      return page.items;
    }

    async loadMore() {
      if (!this.nextPage) return;
      const page = await this.fetchConversations(this.nextPage);
      this.pagesLoaded += 1;
      this.showConversations(page);
    }

    // After a turn: as many pages as were shown, so "more" keeps what it loaded.
    async refreshConversations() {
      const pages = Math.max(1, this.pagesLoaded);
      await this.loadConversations();
      while (this.pagesLoaded < pages && this.nextPage) await this.loadMore();
    }

    showConversations({ items, next }) {
      for (const conversation of items) {
        if (this.els.list.querySelector(`[data-id="${conversation.id}"]`)) continue; // moved between pages
        const button = el("button", "tc-conversation", conversation.title || this.t("untitled"));
        button.type = "button";
        button.title = button.textContent;
        button.dataset.id = conversation.id;
        button.setAttribute("aria-current", String(conversation.id === this.current));
        button.addEventListener("click", () => this.select(conversation.id).catch((error) => this.fail(error)));
        const item = el("li");
        item.append(button);
        this.els.list.append(item);
      }
      this.nextPage = next;
      this.els.more.hidden = !next;
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
      if (conversation.status === "failed") this.notice(this.t("turnFailed"), true);
    }

    addMessage(message) {
      // Tool results reach the customer through the assistant's answer; tool messages are not shown.
      if (message.role !== "user" && message.role !== "assistant") return null;
      if (message.id && this.els.messages.querySelector(`[data-id="${message.id}"]`)) return null;
      const calls = message.tool_calls || [];
      if (message.role === "assistant" && !message.content && !calls.length) return null;
      const item = el("li", `tc-message tc-${message.role}`);
      if (message.id) item.dataset.id = message.id;
      item.append(el("span", "tc-who", this.t(message.role === "user" ? "you" : "assistant")));
      item.append(el("span", "tc-text", message.content || ""));
      const files = attach.render(message.attachments, this.texts);
      if (files) item.append(files);
      if (calls.length) {
        const list = el("ul", "tc-calls");
        list.setAttribute("aria-label", this.t("toolsUsed"));
        for (const call of calls) list.append(this.renderCall(call));
        item.append(list);
      }
      this.els.messages.append(item);
      item.scrollIntoView({ block: "nearest" });
      return item;
    }

    // A call as users see it: its label and how it went, never its error (that is for staff and the model).
    renderCall(call) {
      const item = el("li", "tc-call");
      item.dataset.callId = call.id;
      item.append(el("span", "tc-call-label", callLabel(call)), " ");
      item.append(el("span", `tc-badge tc-status-${call.status}`, this.statusText(call.status)));
      return item;
    }

    updateCall(call) {
      const badge = this.els.messages.querySelector(`[data-call-id="${call.id}"] .tc-badge`);
      if (badge) {
        badge.className = `tc-badge tc-status-${call.status}`;
        badge.textContent = this.statusText(call.status);
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
            this.draft.append(el("span", "tc-who", this.t("assistant")), el("span", "tc-text", ""));
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
          this.activity(this.t("using", { tool: callLabel(data) }));
          this.updateCall(data);
          break;
        case "tool_call_finished":
          this.activity(this.t("toolStatus", { tool: callLabel(data), status: this.statusText(data.status) }));
          this.updateCall(data);
          break;
        case "tool_call":
          this.updateCall(data);
          break;
        case "awaiting_approval":
          this.showWaiting(data.tool_calls.filter((c) => WAITING.has(c.status)));
          break;
        case "tool_call_decided":
          // A decision can arrive after the run it started has finished; only a waiting call changes.
          if (
            this.els.messages.querySelector(
              `[data-call-id="${data.id}"] :is(.tc-status-awaiting_approval, .tc-status-outcome_unknown)`,
            )
          ) {
            this.updateCall(data);
          }
          if (!this.els.waiting.hidden) {
            const settled = data.status === "succeeded" || data.status === "failed"; // a call of unknown outcome
            this.els.waitingText.textContent =
              data.status === "approved"
                ? this.t(data.approver === "user" ? "approvedByUser" : "approvedByStaff")
                : this.t(settled ? "toolStatus" : "decided", {
                    name: callLabel(data),
                    tool: callLabel(data),
                    status: this.statusText(data.status),
                  });
          }
          break;
        case "error":
          // The detail may quote a tool's exception: it stays for staff (the admin) and the model.
          this.notice(this.t("turnFailed"), true);
          break;
        case "turn_end":
          this.activity(data.stopped ? this.els.send.dataset.stopped || "Stopped." : "");
          this.stopRequested = false;
          this.draft = null;
          this.reload().catch((error) => this.fail(error));
          this.refreshConversations().catch(() => {});
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
            if (error.offline || error instanceof TypeError) this.connectionLost(false);
            await sleep(Math.min(RECONNECT_MAX_MS, 1000 * 2 ** failures));
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
      if (content.length > this.maxLength) {
        // Refused here, with the text left where it is: nothing is lost and nothing is sent.
        this.notice(this.t("tooLong", { count: content.length, limit: this.maxLength }), true);
        return;
      }
      this.setSending(true);
      this.notice("");
      let mine = null;
      let accepted = false;
      try {
        if (this.tray && this.tray.busy()) this.activity(this.t("waitingForUploads"));
        const files = this.tray ? await this.tray.uploaded() : [];
        const attachments = files.map((file) => file.id);
        if (!this.current) await this.create();
        const id = this.current;
        mine = this.addMessage({ role: "user", content, attachments: files });
        if (mine) mine.classList.add("tc-pending");
        this.activity(this.t("thinking"));
        const response = await this.request("POST", this.url(id, "messages/"), { content, attachments }, STREAM);
        // The server took the message: only now do the text and the files leave the box.
        accepted = true;
        if (this.els.input.value.trim() === content) this.els.input.value = "";
        if (this.tray) this.tray.clear();
        this.updateCounter();
        await readEvents(
          response,
          (event) => this.apply(id, event),
          (start) => {
            if (this.lastSeq === null) this.lastSeq = start;
          },
        );
      } catch (error) {
        this.activity("");
        // Not taken by the server: the bubble goes (it was never sent), the text stays in the box.
        if (!accepted && mine && mine.classList.contains("tc-pending")) mine.remove();
        this.fail(error, { unsent: !accepted });
        if (this.current && !(error && error.offline)) await this.reload().catch(() => {});
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
        for (const call of message.tool_calls || []) if (WAITING.has(call.status)) waiting.push(call);
      }
      if (status === "awaiting_approval") this.showWaiting(waiting);
      else this.els.waiting.hidden = true;
      this.setSending(this.sending);
    }

    // "Cancel an order (order no: 20251120-0007)": the history has the user's own arguments; events never do.
    describeWaiting(call) {
      const shown = Object.entries(call.arguments || {}).filter(([, value]) => value !== null && value !== "");
      if (!shown.length) return callLabel(call);
      const text = (value) => (typeof value === "object" ? JSON.stringify(value) : String(value));
      return `${callLabel(call)} (${shown.map(([key, value]) => `${words(key)}: ${text(value)}`).join(", ")})`;
    }

    showWaiting(calls) {
      this.status = "awaiting_approval";
      // A client tool's call is run here, by the function the page registered; only the others wait for someone.
      for (const call of calls) if (call.approver === "client") this.runClientCall(call);
      calls = calls.filter((call) => call.approver !== "client");
      if (!calls.length) {
        this.els.waiting.hidden = true;
        this.setSending(this.sending);
        return;
      }
      const mine = calls.length > 0 && calls.every((call) => call.approver === "user");
      // Calls whose process stopped while they ran: nothing waits to run, someone says what happened.
      const unknown = calls.length > 0 && calls.every((call) => call.status === "outcome_unknown");
      let [title, text] = mine ? ["waitingUser", "userText"] : ["waitingStaff", "staffText"];
      if (unknown) [title, text] = mine ? ["unknownUser", "unknownUserText"] : ["unknownStaff", "unknownStaffText"];
      this.els.waitingTitle.textContent = this.t(title);
      this.els.waitingText.textContent = this.t(text);
      // Decline answers the model; withdrawing is for calls staff decide, and only before they run.
      this.els.withdraw.hidden = mine || unknown;
      this.els.waitingCalls.replaceChildren(
        ...calls.map((call) => {
          const name = this.describeWaiting(call);
          const item = el("li", null, name);
          if (call.approver !== "user") return item;
          const controls = call.status === "outcome_unknown" ? confirm.settle : confirm.controls;
          item.append(controls(this, call, name));
          return item;
        }),
      );
      this.els.waiting.hidden = false;
      this.setSending(this.sending);
    }

    // A client tool's call: the registered function gets its arguments (read from the API: events never carry
    // them); what it returns (or throws) is sent as the call's result (or error), and the turn goes on, its events
    // on the conversation's stream. A result the tool's schema refuses is sent on as an error, for the model.
    async runClientCall(call) {
      if (this.runningHere.has(call.id)) return;
      this.runningHere.add(call.id);
      const base = `${this.root.dataset.toolCalls}${call.id}/`;
      this.activity(this.t("using", { tool: callLabel(call) }));
      let body;
      try {
        const stored = await this.json("GET", base);
        const path = this.clientTools[call.name];
        const run = path && path.split(".").reduce((found, key) => (found == null ? found : found[key]), window);
        if (typeof run !== "function") throw new Error(`this page has no function for the tool ${call.name}`);
        const result = await run(stored.arguments || {}, { id: call.id, name: call.name, label: callLabel(call) });
        body = { result: result === undefined ? null : result };
      } catch (error) {
        body = { error: String((error && error.message) || error || "failed") };
      }
      try {
        await this.json("POST", `${base}result/`, body);
      } catch (error) {
        if (error.status === 409) return; // answered elsewhere first (another tab): the stream tells how
        if (error.status === 400 && "result" in body) {
          await this.json("POST", `${base}result/`, { error: `the page's result was refused: ${error.message}` })
            .catch((again) => this.fail(again));
        } else this.fail(error);
      }
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

    // The limit is shown from 80% on, and the box is marked invalid past it.
    updateCounter() {
      const count = this.els.input.value.trim().length;
      const near = count >= this.maxLength * 0.8;
      this.els.counter.hidden = !near;
      this.els.counter.textContent = near ? this.t("counter", { count, limit: this.maxLength }) : "";
      this.els.counter.classList.toggle("tc-error", count > this.maxLength);
      this.els.input.setAttribute("aria-invalid", String(count > this.maxLength));
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
        this.fail(error);
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
      this.els.input.addEventListener("input", () => this.updateCounter());
      this.root.querySelector(".tc-new").addEventListener("click", () => {
        this.create()
          .then(() => this.els.input.focus())
          .catch((error) => this.fail(error));
      });
      this.els.more.addEventListener("click", () => this.loadMore().catch((error) => this.fail(error)));
      if (this.els.allOrigins) {
        this.els.allOrigins.addEventListener("change", () => this.loadConversations().catch((error) => this.fail(error)));
      }
      this.root.querySelector(".tc-withdraw").addEventListener("click", () => {
        this.json("POST", this.url(this.current, "cancel/"))
          .then(() => this.notice(this.t("withdrawn")))
          .then(() => this.reload())
          .catch((error) => this.fail(error));
      });
      for (const example of this.root.querySelectorAll(".tc-example")) {
        example.addEventListener("click", () => {
          this.els.input.value = example.textContent;
          this.updateCounter();
          this.els.input.focus();
        });
      }
    }

    async start() {
      try {
        const items = await this.loadConversations();
        // A linked conversation (#<id>) may be on a later page: it is opened all the same.
        const linked = /^#[0-9a-f-]{36}$/i.test(location.hash) ? location.hash.slice(1) : null;
        const wanted = linked || (items[0] && items[0].id);
        if (wanted) await this.select(wanted);
      } catch (error) {
        this.fail(error);
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
