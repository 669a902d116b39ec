// A minimal chat on the Vercel AI SDK's useChat, talking to a django-toolcalling site as it is.
//
// The chat id is a conversation's id: create one with POST <prefix>/conversations/ {"assistant": "shop"} and pass
// its id here. The page is served by the Django site itself, so the session cookie signs the requests in; Django
// asks for its CSRF token on every POST (the "csrftoken" cookie, sent back as X-CSRFToken).
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from "ai";
import { useState } from "react";

const PREFIX = "/api/toolcalling"; // where the site includes toolcalling.urls

function csrfToken(): string {
  return document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/)?.[1] ?? "";
}

// What the app adds to a tool part: its own id of the call, and who decides a gated one ("user" or "staff").
type Decider = { toolcalling?: { id: number; approver: "user" | "staff" | null } };

export function Chat({ conversationId }: { conversationId: string }) {
  const [input, setInput] = useState("");
  const { messages, sendMessage, addToolApprovalResponse, resumeStream, status, error } = useChat({
    id: conversationId,
    resume: true, // on mount: take up a turn still running (a staff decision's continuation, say)
    transport: new DefaultChatTransport({
      api: `${PREFIX}/ai-sdk/chat`,
      credentials: "same-origin",
      headers: () => ({ "X-CSRFToken": csrfToken() }),
    }),
    // The user's Confirm / Decline goes to the server at once; the server decides, never the browser.
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });

  return (
    <div>
      {messages.map((message: UIMessage) => (
        <div key={message.id} className={message.role}>
          {message.parts.map((part, index) => {
            if (part.type === "text") return <p key={index}>{part.text}</p>;
            if (part.type === "reasoning") return <details key={index}><summary>Thinking</summary>{part.text}</details>;
            if (!part.type.startsWith("tool-") || !("state" in part)) return null;
            const approver = (part.callProviderMetadata as Decider | undefined)?.toolcalling?.approver;
            return (
              <div key={index} className="tool">
                <strong>{part.title ?? part.type.slice(5)}</strong>
                {part.state === "approval-requested" && approver === "user" && (
                  <span>
                    <button onClick={() => addToolApprovalResponse({ id: part.approval.id, approved: true })}>Confirm</button>
                    <button onClick={() => addToolApprovalResponse({ id: part.approval.id, approved: false })}>Decline</button>
                  </span>
                )}
                {part.state === "approval-requested" && approver === "staff" && (
                  <span>
                    Waiting for a staff member. <button onClick={() => resumeStream()}>Check again</button>
                  </span>
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
        <input value={input} onChange={(event) => setInput(event.target.value)} disabled={status !== "ready"} />
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
