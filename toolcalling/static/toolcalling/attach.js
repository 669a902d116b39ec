// Attachments on the chat page: the attach button, paste and drag and drop, a preview of each file with its
// upload progress, and the server's own sentence when it refuses one. Files upload as soon as they are picked
// (POST attachments/), so Send only names them by id. chat.js creates one tray per chat (window.toolcallingAttach).
"use strict";

(function () {
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  const sizeText = (size) =>
    size < 1024 ? `${size} B` : size < 1048576 ? `${Math.round(size / 1024)} KiB` : `${(size / 1048576).toFixed(1)} MiB`;

  class Tray {
    // chat: the page's Chat (its texts, t(), csrfToken(), notice()); the tray's elements are in its form.
    constructor(chat) {
      this.chat = chat;
      const root = chat.root;
      this.url = root.dataset.attachments;
      this.maxBytes = Number(root.dataset.maxBytes) || Infinity;
      this.maxFiles = Number(root.dataset.maxFiles) || Infinity;
      this.types = (root.dataset.types || "").split(" ").filter(Boolean);
      this.list = root.querySelector(".tc-tray");
      this.input = root.querySelector(".tc-file");
      this.button = root.querySelector(".tc-attach");
      this.items = []; // {file, node, id, xhr, done: Promise}
      this.wire(root);
    }

    wire(root) {
      this.button.addEventListener("click", () => this.input.click());
      this.input.addEventListener("change", () => {
        this.add(Array.from(this.input.files || []));
        this.input.value = "";
      });
      const box = root.querySelector(".tc-composer");
      box.addEventListener("paste", (event) => {
        const files = Array.from((event.clipboardData && event.clipboardData.files) || []);
        if (files.length) {
          event.preventDefault(); // a pasted screenshot is a file, not text
          this.add(files);
        }
      });
      box.addEventListener("dragover", (event) => {
        if (Array.from(event.dataTransfer.types || []).includes("Files")) {
          event.preventDefault();
          box.classList.add("tc-dropping");
        }
      });
      box.addEventListener("dragleave", () => box.classList.remove("tc-dropping"));
      box.addEventListener("drop", (event) => {
        box.classList.remove("tc-dropping");
        const files = Array.from((event.dataTransfer && event.dataTransfer.files) || []);
        if (files.length) {
          event.preventDefault();
          this.add(files);
        }
      });
    }

    add(files) {
      for (const file of files) {
        if (this.items.length >= this.maxFiles) {
          this.chat.notice(this.chat.t("tooManyFiles", { limit: this.maxFiles }), true);
          return;
        }
        // Checked here only to spare a useless upload; the server decides from the bytes either way.
        if (file.size > this.maxBytes) {
          this.chat.notice(this.chat.t("fileTooLarge", { name: file.name, limit: sizeText(this.maxBytes) }), true);
          continue;
        }
        this.upload(file);
      }
    }

    upload(file) {
      const node = el("li", "tc-attachment tc-uploading");
      node.dataset.name = file.name;
      if (file.type.startsWith("image/")) {
        const image = el("img", "tc-thumb");
        image.alt = file.name;
        image.src = URL.createObjectURL(file);
        image.addEventListener("load", () => URL.revokeObjectURL(image.src), { once: true });
        node.append(image);
      }
      node.append(el("span", "tc-file-name", `${file.name} (${sizeText(file.size)})`));
      const progress = el("progress", "tc-progress");
      progress.max = 100;
      progress.value = 0;
      progress.setAttribute("aria-label", this.chat.t("uploading", { name: file.name }));
      node.append(progress);
      const remove = el("button", "tc-secondary tc-remove", "×");
      remove.type = "button";
      remove.setAttribute("aria-label", this.chat.t("removeFile", { name: file.name }));
      node.append(remove);
      this.list.append(node);
      this.list.hidden = false;
      const item = { file, node, id: null, xhr: new XMLHttpRequest() };
      remove.addEventListener("click", () => this.remove(item));
      item.done = new Promise((resolve) => {
        const xhr = item.xhr;
        xhr.open("POST", this.url);
        xhr.setRequestHeader("X-CSRFToken", this.chat.csrfToken());
        xhr.setRequestHeader("Accept", "application/json");
        xhr.upload.addEventListener("progress", (event) => {
          if (event.lengthComputable) progress.value = Math.round((100 * event.loaded) / event.total);
        });
        xhr.addEventListener("load", () => {
          let data = null;
          try {
            data = JSON.parse(xhr.responseText);
          } catch (error) {
            data = null;
          }
          if (xhr.status === 201 && data) {
            item.id = data.id;
            item.data = data;
            node.dataset.id = data.id;
            node.classList.remove("tc-uploading");
            progress.remove();
          } else {
            this.refused(item, this.chat.describeError(xhr.status, data));
          }
          resolve();
        });
        xhr.addEventListener("error", () => {
          this.refused(item, this.chat.t("offline"));
          resolve();
        });
        xhr.addEventListener("abort", () => resolve());
        const body = new FormData();
        body.append("file", file);
        xhr.send(body);
      });
      this.items.push(item);
    }

    // A refused file leaves the tray, and the notice says which and why (the server's sentence).
    refused(item, reason) {
      this.drop(item);
      this.chat.notice(this.chat.t("fileRefused", { name: item.file.name, reason }), true);
    }

    remove(item) {
      item.xhr.abort();
      this.drop(item);
    }

    drop(item) {
      item.node.remove();
      this.items = this.items.filter((other) => other !== item);
      this.list.hidden = this.items.length === 0;
    }

    // The uploaded files (as POST attachments/ answered), once every upload still running has ended.
    async uploaded() {
      await Promise.all(this.items.map((item) => item.done));
      return this.items.filter((item) => item.id).map((item) => item.data);
    }

    busy = () => this.items.some((item) => !item.id);

    clear() {
      for (const item of this.items) item.node.remove();
      this.items = [];
      this.list.hidden = true;
    }
  }

  // A sent message's files: images as thumbnails linking to the file, others as links.
  function render(attachments, texts) {
    if (!attachments || !attachments.length) return null;
    const list = el("ul", "tc-files");
    list.setAttribute("aria-label", texts.attachments || "Attachments");
    for (const attachment of attachments) {
      const item = el("li", "tc-sent-file");
      const link = el("a");
      link.href = attachment.url;
      link.target = "_blank";
      link.rel = "noopener";
      if (attachment.content_type.startsWith("image/")) {
        const image = el("img", "tc-thumb");
        image.src = attachment.url;
        image.alt = attachment.name;
        image.loading = "lazy";
        link.append(image);
      } else {
        link.textContent = attachment.name;
      }
      item.append(link);
      list.append(item);
    }
    return list;
  }

  window.toolcallingAttach = { Tray, render };
})();
