"""Comments (trainhub.comments): list and add those of an object, edit and delete one's own.
What may be commented on, and by whom, is each kind's access rule (trainhub.comments.kinds)."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from trainhub.comments.model import CommentText, NewComment
from trainhub_server.comments import CommentsParams
from trainhub_server.handlers import TrainhubAPIHandler


class CommentsHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        params = self.query(CommentsParams)
        comments = self.app.comments
        self.reply(
            await self.calls.call(comments.list, params.kind, params.target, user=self.owner)
        )

    @web.authenticated
    @authorized
    async def post(self) -> None:
        new = self.body_as(NewComment)
        self.reply(await self.calls.call(self.app.comments.add, new, user=self.owner), 201)


class CommentHandler(TrainhubAPIHandler):
    @web.authenticated
    @authorized
    async def patch(self, comment_id: str) -> None:
        text = self.body_as(CommentText)
        edit = self.app.comments.edit
        self.reply(await self.calls.call(edit, comment_id, text, user=self.owner))

    @web.authenticated
    @authorized
    async def delete(self, comment_id: str) -> None:
        await self.calls.call(self.app.comments.delete, comment_id, user=self.owner)
        self.set_status(204)
        self.finish()
