// `npm run build` writes dist/ for the site to serve at /react/ (`base`); `npm run dev` serves the page with hot
// reload and passes the API and the sign-in page to the Django site, so both are one origin for the browser
// (its session cookie and CSRF token work as on the site's own pages).
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

const site = process.env.DJANGO_URL ?? "http://127.0.0.1:8000";
// The browser's Host header goes along as it is (changeOrigin: false; a bare URL would change it to the site's):
// Django's CSRF check compares the form's Origin with that Host, and refused the sign-in when they differed.
const toSite = { target: site, changeOrigin: false };

export default defineConfig({
  base: "/react/",
  plugins: [react()],
  server: { proxy: { "/api": toSite, "/accounts": toSite, "/static": toSite } },
});
