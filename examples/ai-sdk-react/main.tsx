// The page: signs in through the site's session, opens a conversation (the one in ?conversation=, else a new
// one with the assistant below), reads its history and shows the chat.
import type { UIMessage } from "ai";
import { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";

import { Chat } from "./Chat";

const PREFIX = "/api/toolcalling";
const ASSISTANT = "shop"; // the demo site's assistant: use one of yours
const LOGIN = "/accounts/login/"; // the site's sign-in page (LOGIN_URL)

function csrfToken(): string {
  return document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/)?.[1] ?? "";
}

type Opened = { id: string; history: UIMessage[] } | { signIn: true } | { error: string };

async function open(): Promise<Opened> {
  const url = new URL(window.location.href);
  let id = url.searchParams.get("conversation");
  if (!id) {
    const created = await fetch(`${PREFIX}/conversations/`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify({ assistant: ASSISTANT }),
    });
    if (created.status === 401 || created.status === 403) return { signIn: true };
    if (!created.ok) return { error: (await created.json()).detail ?? created.statusText };
    id = (await created.json()).id as string;
    url.searchParams.set("conversation", id);
    window.history.replaceState(null, "", url); // a reload opens the same conversation
  }
  const history = await fetch(`${PREFIX}/ai-sdk/chat/${id}/messages`, { credentials: "same-origin" });
  if (history.status === 401 || history.status === 403) return { signIn: true };
  if (!history.ok) return { error: (await history.json()).detail ?? history.statusText };
  return { id, history: await history.json() };
}

function Page() {
  const [opened, setOpened] = useState<Opened | null>(null);
  useEffect(() => {
    open().then(setOpened, (error) => setOpened({ error: String(error) }));
  }, []);
  if (opened === null) return <p>Opening the conversation…</p>;
  if ("signIn" in opened) {
    const next = encodeURIComponent(window.location.pathname + window.location.search);
    return <p><a href={`${LOGIN}?next=${next}`}>Sign in</a> to chat.</p>;
  }
  if ("error" in opened) return <p className="error">{opened.error}</p>;
  return <Chat conversationId={opened.id} history={opened.history} />;
}

// No StrictMode: its second run of the effect in development would open a second conversation.
createRoot(document.getElementById("root")!).render(<Page />);
