// `npm run build` writes dist/ for the site to serve at /react/ (`base`); `npm run dev` serves the page with hot
// reload and passes the API and the sign-in page to the Django site, so both are one origin for the browser
// (its session cookie and CSRF token work as on the site's own pages).
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

const site = process.env.DJANGO_URL ?? "http://127.0.0.1:8000";

export default defineConfig({
  base: "/react/",
  plugins: [react()],
  server: { proxy: { "/api": site, "/accounts": site, "/static": site } },
});
