// Drives the AI SDK's own chat client (AbstractChat + DefaultChatTransport, what useChat runs) for the tests.
// Commands come as JSON lines on stdin; each is answered with one {"reply": ...} line on stdout, and every status
// change of the chat is reported as an {"event": "status", ...} line as it happens.
import { createInterface } from "node:readline";
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
  validateUIMessages,
} from "ai";

const write = (line) => process.stdout.write(JSON.stringify(line) + "\n");
const listeners = new Set();

// The chat's state kept in plain objects (the React and Vue packages keep it in their own reactive stores).
class State {
  constructor(messages = []) {
    this.messages = messages;
    this._status = "ready";
    this.error = undefined;
  }
  get status() {
    return this._status;
  }
  set status(status) {
    this._status = status;
    write({ event: "status", status });
    for (const listener of listeners) listener(status);
  }
  pushMessage(message) {
    this.messages = [...this.messages, this.snapshot(message)];
  }
  popMessage() {
    this.messages = this.messages.slice(0, -1);
  }
  replaceMessage(index, message) {
    this.messages = [...this.messages.slice(0, index), this.snapshot(message), ...this.messages.slice(index + 1)];
  }
  snapshot(value) {
    return structuredClone(value);
  }
}

// The transport as a site configures it, recording each chunk after the SDK's own schema validation.
class RecordingTransport extends DefaultChatTransport {
  constructor(options, chunks) {
    super(options);
    this.chunks = chunks;
  }
  processResponseStream(stream) {
    const chunks = this.chunks;
    return super.processResponseStream(stream).pipeThrough(
      new TransformStream({
        transform(chunk, controller) {
          chunks.push(chunk);
          controller.enqueue(chunk);
        },
      }),
    );
  }
}

class NodeChat extends AbstractChat {
  constructor(init) {
    super({ ...init, state: new State(init.messages) });
  }
}

let chat;
let chunks = [];
let toolCalls = []; // what the chat's onToolCall was called with, as "toolName:toolCallId"
const errors = [];

function state() {
  const taken = chunks;
  chunks = [];
  chat.transport.chunks = chunks;
  const called = toolCalls;
  toolCalls = [];
  return {
    toolCalls: called,
    status: chat.status,
    error: chat.error ? chat.error.message : null,
    messages: chat.messages,
    chunks: taken,
  };
}

const commands = {
  // history: start where the conversation is, from ai-sdk/chat/{id}/messages (as a page passes useChat its
  // messages), after the SDK's own validateUIMessages.
  async open({ api, id, user, password, auto, history }) {
    const headers = { Authorization: "Basic " + Buffer.from(`${user}:${password}`).toString("base64") };
    let messages;
    if (history) {
      const response = await fetch(`${api}/${id}/messages`, { headers });
      const body = await response.json();
      if (!response.ok) return { status: response.status, body };
      messages = body.length ? await validateUIMessages({ messages: body }) : [];
    }
    chunks = [];
    chat = new NodeChat({
      id,
      messages,
      transport: new RecordingTransport({ api, headers }, chunks),
      onError: (error) => errors.push(error.message),
      // A page runs its client tools here; the driver records the calls (the test gives the output itself).
      onToolCall: ({ toolCall }) => {
        toolCalls.push(`${toolCall.toolName}:${toolCall.toolCallId}`);
      },
      // auto: "tools" sends once every tool part of the last step has its output (a client tool's, say).
      sendAutomaticallyWhen: auto
        ? auto === "tools"
          ? lastAssistantMessageIsCompleteWithToolCalls
          : lastAssistantMessageIsCompleteWithApprovalResponses
        : undefined,
    });
    return { id: chat.id, messages: chat.messages };
  },
  async send({ text, files }) {
    await chat.sendMessage(files ? { text, files } : { text });
    return state();
  },
  async answer({ approvalId, approved, reason }) {
    await chat.addToolApprovalResponse({ id: approvalId, approved, reason });
    // Without sendAutomaticallyWhen the page sends the answers itself, as a button's handler would.
    if (!chat.sendAutomaticallyWhen) await chat.sendMessage();
    else await waitUntilSettled();
    return state();
  },
  // A client tool's result (or its error), as a page's tool handler gives it.
  async output({ tool, toolCallId, output, errorText }) {
    const kind = errorText === undefined ? "output-available" : "output-error";
    await chat.addToolOutput({ tool, toolCallId, state: kind, output, errorText });
    if (!chat.sendAutomaticallyWhen) await chat.sendMessage();
    else await waitUntilSettled();
    return state();
  },
  async regenerate() {
    await chat.regenerate();
    return state();
  },
  async resume() {
    await chat.resumeStream();
    return state();
  },
  async state() {
    return state();
  },
};

// An automatic send starts after addToolApprovalResponse returns: wait until it has started and ended.
function waitUntilSettled() {
  return new Promise((resolve) => {
    let started = chat.status === "submitted" || chat.status === "streaming";
    const listener = (status) => {
      started ||= status === "submitted";
      if (started && (status === "ready" || status === "error")) {
        listeners.delete(listener);
        resolve();
      }
    };
    listeners.add(listener);
  });
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { op, ...args } = JSON.parse(line);
  try {
    write({ reply: await commands[op](args) });
  } catch (error) {
    write({ reply: { thrown: String(error && error.stack ? error.stack : error) } });
  }
}
