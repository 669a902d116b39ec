// A minimal chat on the Vercel AI SDK's useChat, talking to a django-toolcalling site as it is.
//
// The chat id is a conversation's id: create one with POST <prefix>/conversations/ {"assistant": "shop"} and pass
// its id here, with its history from GET <prefix>/ai-sdk/chat/<id>/messages (main.tsx does both). The page is
// served by the Django site itself (or proxied to it), so the session cookie signs the requests in; Django asks
// for its CSRF token on every POST (the "csrftoken" cookie, sent back as X-CSRFToken).
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from "ai";
import { useEffect, useState } from "react";

const PREFIX = "/api/toolcalling"; // where the site includes toolcalling.urls

function csrfToken(): string {
  return document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/)?.[1] ?? "";
}

// What the app adds to a tool part: its own id of the call, and who decides a gated one ("user" or "staff").
type Decider = { toolcalling?: { id: number; approver: "user" | "staff" | null } };
// What an approval request carries for the person who decides (the part's approval.descriptor).
type Descriptor = { arguments?: Record<string, unknown>; previewText?: string | null };

function waitsForStaff(message: UIMessage | undefined): boolean {
  return !!message?.parts.some(
    (part) =>
      part.type.startsWith("tool-") &&
      "state" in part &&
      part.state === "approval-requested" &&
      (part.callProviderMetadata as Decider | undefined)?.toolcalling?.approver === "staff",
  );
}

export function Chat({ conversationId, history }: { conversationId: string; history: UIMessage[] }) {
  const [input, setInput] = useState("");
  const { messages, setMessages, sendMessage, addToolApprovalResponse, resumeStream, status, error } = useChat({
    id: conversationId,
    messages: history, // start where the conversation is
    resume: true, // on mount: take up a turn still running, or wait with a call that staff decide
    transport: new DefaultChatTransport({
      api: `${PREFIX}/ai-sdk/chat`,
      credentials: "same-origin",
      headers: () => ({ "X-CSRFToken": csrfToken() }),
    }),
    // The user's Confirm / Decline goes to the server at once; the server decides, never the browser.
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  // While a call waits for staff, follow the conversation: the stream waits with the page for the decision
  // and brings the call's outcome and the answer without a reload (it ends after a quiet while: follow again).
  // Then read the history, which has whatever was decided while the page was not following.
  const staff = waitsForStaff(messages.at(-1));
  useEffect(() => {
    if (status !== "ready" || !staff) return;
    resumeStream().then(async () => {
      const response = await fetch(`${PREFIX}/ai-sdk/chat/${conversationId}/messages`, { credentials: "same-origin" });
      if (response.ok) setMessages(await response.json());
    });
  }, [status, staff]); // eslint-disable-line react-hooks/exhaustive-deps

  return (
    <div>
      {messages.map((message: UIMessage) => (
        <div key={message.id} className={message.role}>
          {message.parts.map((part, index) => {
            if (part.type === "text") return <p key={index}>{part.text}</p>;
            if (part.type === "reasoning") return <details key={index}><summary>Thinking</summary>{part.text}</details>;
            if (!part.type.startsWith("tool-") || !("state" in part)) return null;
            const approver = (part.callProviderMetadata as Decider | undefined)?.toolcalling?.approver;
            const asked = part.state === "approval-requested" ? (part.approval.descriptor as Descriptor | undefined) : undefined;
            return (
              <div key={index} className="tool">
                <strong>{part.title ?? part.type.slice(5)}</strong>
                {part.state === "input-streaming" && <code>{JSON.stringify(part.input ?? {})}…</code>}
                {asked?.arguments && <pre>{JSON.stringify(asked.arguments, null, 2)}</pre>}
                {asked?.previewText && <p className="preview">{asked.previewText}</p>}
                {part.state === "approval-requested" && approver === "user" && (
                  <span>
                    <button onClick={() => addToolApprovalResponse({ id: part.approval.id, approved: true })}>Confirm</button>
                    <button onClick={() => addToolApprovalResponse({ id: part.approval.id, approved: false })}>Decline</button>
                  </span>
                )}
                {part.state === "approval-requested" && approver === "staff" && (
                  <span>Waiting for a staff member…</span>
                )}
                {part.state === "output-available" && <pre>{JSON.stringify(part.output, null, 2)}</pre>}
                {part.state === "output-error" && <em>{part.errorText}</em>}
                {part.state === "output-denied" && <em>Declined.</em>}
              </div>
            );
          })}
        </div>
      ))}
      {error && <p className="error">{error.message}</p>}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (input.trim()) sendMessage({ text: input });
          setInput("");
        }}
      >
        {/* Named, with a Send button: a bare box says neither what it is for nor how to send. */}
        <input
          aria-label="Your message"
          placeholder="Ask the assistant…"
          value={input}
          onChange={(event) => setInput(event.target.value)}
          disabled={status !== "ready"}
        />
        <button type="submit" disabled={status !== "ready" || !input.trim()}>
          Send
        </button>
        {/* Stopping the turn is the app's own endpoint: the SDK's stop() only stops reading. */}
        <button
          type="button"
          onClick={() =>
            fetch(`${PREFIX}/conversations/${conversationId}/stop/`, {
              method: "POST",
              credentials: "same-origin",
              headers: { "X-CSRFToken": csrfToken() },
            })
          }
        >
          Stop
        </button>
      </form>
    </div>
  );
}
