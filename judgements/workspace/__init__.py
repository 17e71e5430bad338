"""The analyst's workspace in the browser: projects, uploads, background jobs, raters.

Who may use it: analysts and admins. Raters get 403, anonymous visitors the login
page; every POST needs the CSRF token.
"""
